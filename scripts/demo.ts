/**
 * The main job: the whole system in one step. It starts the all-in-one service (executor, scheduler with
 * the HTTP API, and llm-sim when no model is configured) on the local Redis, then runs the seeds' example
 * through the HTTP API — query Shanghai's weather, then write a weekend plan to a markdown file —
 * printing the run's live events as the API streams them (the answer's text as the model writes it), the
 * API's address, its docs page and Bull Board.
 */
import { createClient, type StreamedAnswerDelta, type StreamedEvent } from '@agent-reach/client';
import { exitWith, startDemoStack } from './demo-stack.js';

const TASK = process.argv[2] ?? '查一下上海天气，然后写一份周末两日游建议存成 md 文件';
const AGENT = process.env.DEMO_AGENT ?? 'trip_planner';

async function main(): Promise<number> {
  const stack = await startDemoStack(process.env);
  if (!stack) return 1;

  const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  const run = await client.createRun({ agent: AGENT, input: TASK });
  console.log(`POST /v1/runs → ${run.run_id} (${AGENT}): ${TASK}\n`);
  console.log(`Live events (GET /v1/runs/${run.run_id}/events):`);
  for await (const event of client.streamEvents(run.run_id, { answerDeltas: true })) print(event);
  const final = await client.getRun(run.run_id);
  // The file's path, from the tool result exactly as the model saw it (GET /v1/runs/:id).
  const paths = final.steps.flatMap((step) => {
    const content = step.result?.content as { path?: unknown } | undefined;
    return step.tool === 'write_markdown_file' && step.kind === 'ok' && typeof content?.path === 'string'
      ? [content.path]
      : [];
  });

  console.log(
    `\nOutcome: ${final.status} (${final.reason}) after ${final.iterations} model turns, ${final.usage.total_tokens} tokens`,
  );
  if (final.answer) console.log(`Answer: ${final.answer}`);
  if (final.report) console.log(`Report: ${final.report}`);
  for (const file of paths) console.log(`Written file: ${file}`);
  console.log(`\nInspect it again with: pnpm exec agent-reach runs show ${run.run_id}`);
  await stack.close();
  return final.status === 'succeeded' && paths.length > 0 ? 0 : 2;
}

/** The turn and try whose text is being printed as it streams ('' when none). */
let streaming = '';

function print({ type, data }: StreamedEvent | StreamedAnswerDelta): void {
  const d = data as Record<string, any>;
  if (type === 'answer_delta') {
    if (typeof d.content !== 'string' || d.content === '') return;
    const at = `${d.turn}.${d.attempt}`;
    // A new turn, or a new try of one, starts its text on a line of its own.
    if (at !== streaming) process.stdout.write(`${streaming ? '\n' : ''}  model writing (turn ${d.turn}): `);
    streaming = at;
    process.stdout.write(d.content);
    return;
  }
  if (streaming) process.stdout.write('\n');
  streaming = '';
  switch (type) {
    case 'run_started':
      console.log(`  run started: agent ${d.agent}, model ${d.model}`);
      break;
    case 'plan':
      if (d.steps?.length)
        console.log(
          `  plan:\n${d.steps.map((s: { title: string }, i: number) => `    ${i + 1}. ${s.title}`).join('\n')}`,
        );
      break;
    case 'llm_request':
      console.log(
        `  model turn ${d.turn}: ${d.tool_calls ? `${d.tool_calls} tool call(s)` : 'final answer'} (${d.latency_ms} ms, ${d.prompt_tokens}+${d.completion_tokens} tokens)`,
      );
      break;
    case 'tool_result': {
      const args = String(d.arguments);
      const status = d.ok ? 'ok' : `error ${d.error?.kind}: ${d.error?.message}`;
      console.log(
        `    ${d.ok ? '✓' : '✗'} ${d.tool} ${args.length > 90 ? `${args.slice(0, 90)}…` : args} → ${status} (${d.duration_ms} ms, ${d.attempts} attempt(s))`,
      );
      break;
    }
    case 'step_done':
      console.log(`    step done: ${d.step?.title}`);
      break;
    case 'guard':
      console.log(`  guard ${d.guard} (${d.action}): ${d.report}`);
      break;
    case 'run_finished':
      console.log(`  run finished: ${d.outcome?.status}`);
      break;
    default:
  }
}

exitWith(main());
