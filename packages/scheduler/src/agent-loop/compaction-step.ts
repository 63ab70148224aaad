import type { ToolCatalogEntry } from '@agent-reach/shared';
import { compact } from './compaction.js';
import { buildSystemPrompt, toolSpecs } from './prompt.js';
import type { RunContext } from './run-context.js';
import type { StepResult } from './steps.js';
import { exceedsTokens } from './tokens.js';

/**
 * Before a model turn: when the prompt it would send passes the threshold, folds the oldest rounds into
 * the summary (keeping the last few verbatim) and records the sizes before and after.
 */
export function compactionStep(run: RunContext, tools: ToolCatalogEntry[]): StepResult {
  const { state, limits } = run;
  const next = { type: 'model_turn', tools } as const;
  const size = exceedsTokens(promptText(run, tools), limits.compactionThresholdTokens);
  if (!size.exceeds) return { next };
  const before = state.summary ? structuredClone(state.summary) : undefined;
  const { folded, foldedTurns, digest } = compact(state, limits.compactionKeepRounds);
  if (folded === 0) return { next };
  const after = exceedsTokens(promptText(run, tools), 0);
  run.emit({
    type: 'compaction',
    before_tokens: size.tokens ?? 0,
    after_tokens: after.tokens ?? 0,
    folded_messages: folded,
    folded_turns: foldedTurns,
    ...(digest ? { folded_digest: digest } : {}),
    ...(before ? { summary_before: before } : {}),
    summary: structuredClone(state.summary!),
  });
  return { checkpoint: 'compaction', next };
}

/** Everything the model turn would send, as the text its size is counted on. */
function promptText(run: RunContext, tools: ToolCatalogEntry[]): string {
  return (
    buildSystemPrompt(run.deps.agent, run.state, tools) +
    JSON.stringify(run.state.messages) +
    JSON.stringify(toolSpecs(tools))
  );
}
