/** What a run's state says about its models: tokens per model that answered, and the cost. */
interface ModelAccount {
  cost?: number;
  modelUsage?: Record<
    string,
    { turns: number; prompt_tokens: number; completion_tokens: number; cost?: number }
  >;
}

const money = (cost: number) => String(Number(cost.toPrecision(6)));

/** Lines of `runs show` for a run's tokens per model and its cost (none for a run without them). */
export function costLines(state: ModelAccount | undefined): string[] {
  const lines = Object.entries(state?.modelUsage ?? {}).map(
    ([model, u]) =>
      `model ${model}: ${u.turns} turns, ${u.prompt_tokens}+${u.completion_tokens} tokens${u.cost === undefined ? '' : `, cost ${money(u.cost)}`}`,
  );
  if (state?.cost !== undefined) lines.push(`cost: ${money(state.cost)}`);
  return lines;
}
