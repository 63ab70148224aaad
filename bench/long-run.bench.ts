/**
 * What a long run writes to Redis: a 50-step run (each step a model turn with one call and a 4 KB tool
 * result) checkpointed through `RunStore` as the run worker does (a checkpoint after the model's answer,
 * one after the tool result, one at the end), once with delta checkpoints and once with the whole state at
 * every checkpoint (the format before deltas). The bytes written are the checkpoints' arguments as sent
 * (state, messages, events, listing, ledger) and, apart, the executor's write of each result to the run's
 * results hash; what the steps carry is their messages (the assistant message with the call's arguments,
 * the tool message with the result). Ratios to the carried bytes are printed with the issue's target.
 *
 *   pnpm bench:long
 *     BENCH_LONG_STEPS (default 50), BENCH_LONG_RESULT_BYTES (default 4096), REDIS_URL
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createKeys, toolMessageContent, type ToolResult } from '@agent-reach/protocol';
import { constants } from '@agent-reach/shared';
import type { RunEvent, RunState } from '@agent-reach/scheduler';
import { createRunState, RunStore, type StateFormat } from '@agent-reach/scheduler/internal';
import { deleteByPrefix } from './redis-stats.js';
import { envInt } from './env.js';
import { formatTarget, target } from './targets.js';

const bytes = (args: ReadonlyArray<string | number>) =>
  args.reduce<number>((sum, a) => sum + Buffer.byteLength(String(a)), 0);

/** A store that counts the bytes of every checkpoint it sends. */
class CountingStore extends RunStore {
  sent = 0;
  override async write(
    runId: string,
    args: Array<string | number>,
    keyCount?: 4 | 7 | 8,
    whole?: () => Array<string | number>,
  ) {
    const written = await super.write(runId, args, keyCount, whole);
    this.sent += bytes(args) + (written.wholeSent && whole ? bytes(whole()) : 0);
    return written;
  }
}

interface Figures {
  checkpointBytes: number;
  resultBytes: number;
  carriedBytes: number;
  stateKeyBytes: number;
}

async function playRun(
  redis: Redis,
  prefix: string,
  format: StateFormat,
  steps: number,
  resultBytes: number,
): Promise<Figures> {
  const keys = createKeys(prefix);
  const store = new CountingStore(redis, keys, { retentionS: 600, stateFormat: format });
  const state: RunState = createRunState({
    runId: `run_long_${format}`,
    agent: 'bench_agent',
    input: 'a long run',
    deadlineMs: 600_000,
  });
  state.status = 'running';
  const { writer } = await store.claim(state.runId);
  const save = (events: RunEvent[]) => writer.prepare(state, events)();
  await save([{ type: 'run_started', at: Date.now(), agent: state.agent, input: state.input, model: 'm' }]);
  let carried = 0;
  let recorded = 0;
  const seen = state.messages.length;
  for (let turn = 1; turn <= steps; turn += 1) {
    const id = `call_${turn}`;
    const args = JSON.stringify({ query: `page ${turn} of the report`, limit: 20 });
    state.messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'fetch_page', arguments: args } }],
    });
    state.iterations = turn;
    state.usage = { prompt_tokens: 900 * turn, completion_tokens: 30 * turn, total_tokens: 930 * turn };
    const at = Date.now();
    await save([
      {
        type: 'llm_request',
        at,
        turn,
        model: 'm',
        latency_ms: 5,
        prompt_tokens: 900,
        completion_tokens: 30,
        finish_reason: 'tool_calls',
        tool_calls: 1,
        tools_offered: ['fetch_page'],
        message: { content: null, tool_calls: [{ id, name: 'fetch_page', arguments: args }] },
      },
      {
        type: 'tool_dispatched',
        at,
        turn,
        calls: [{ tool_call_id: id, tool: 'fetch_page', arguments: args }],
      },
    ]);
    // The executor records the result in the run's results hash before it replies.
    const result: ToolResult = {
      tool_call_id: id,
      name: 'fetch_page',
      ok: true,
      status: 'ok',
      content: { text: 'r'.repeat(resultBytes), page: turn },
      duration_ms: 3,
      attempts: 1,
    };
    const resultJson = JSON.stringify({ ...result, executor_id: 'executor_1' });
    recorded += Buffer.byteLength(resultJson);
    await redis.hset(keys.results(state.runId), id, resultJson);
    state.messages.push({ role: 'tool', tool_call_id: id, content: toolMessageContent(result) });
    state.steps.push({
      turn,
      tool_call_id: id,
      tool: 'fetch_page',
      arguments: args,
      ok: true,
      duration_ms: 3,
      attempts: 1,
      kind: 'ok',
      answered: 'dispatched',
      executor_id: 'executor_1',
    });
    await save([
      {
        type: 'tool_result',
        at: Date.now(),
        turn,
        tool_call_id: id,
        tool: 'fetch_page',
        arguments: args,
        ok: true,
        duration_ms: 3,
        attempts: 1,
        kind: 'ok',
        answered: 'dispatched',
        executor_id: 'executor_1',
        result,
      } as RunEvent,
    ]);
  }
  for (const m of state.messages.slice(seen)) carried += Buffer.byteLength(JSON.stringify(m));
  state.messages.push({ role: 'assistant', content: 'the report, summed up' });
  state.outcome = {
    status: 'succeeded',
    reason: 'final_answer',
    usage: state.usage,
    iterations: state.iterations,
    steps: state.steps,
  };
  state.status = 'succeeded';
  const before = store.sent;
  await save([{ type: 'run_finished', at: Date.now(), outcome: state.outcome } as RunEvent]);
  const stateKeyBytes = Number(await redis.memory('USAGE', keys.runState(state.runId)));
  console.log(`  ${format}: the final checkpoint ${store.sent - before} bytes`);
  return { checkpointBytes: store.sent, resultBytes: recorded, carriedBytes: carried, stateKeyBytes };
}

async function main(): Promise<void> {
  const steps = envInt('BENCH_LONG_STEPS', 50, 1);
  const resultBytes = envInt('BENCH_LONG_RESULT_BYTES', 4096, 1);
  const redis = new Redis(process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL);
  const prefix = `bench-long-${randomUUID().slice(0, 6)}`;
  try {
    console.log(`long-run bench: ${steps} steps, each one call with a ${resultBytes}-byte tool result`);
    const delta = await playRun(redis, `${prefix}-d`, 'delta', steps, resultBytes);
    const whole = await playRun(redis, `${prefix}-w`, 'whole', steps, resultBytes);
    for (const [name, f] of [
      ['delta checkpoints', delta],
      ['whole state (before)', whole],
    ] as const) {
      console.log(
        `  ${name.padEnd(22)} checkpoints ${(f.checkpointBytes / steps).toFixed(0)} B/step, ` +
          `${f.checkpointBytes} B in all; the executor's result records ${(f.resultBytes / steps).toFixed(0)} B/step; ` +
          `the steps carry ${(f.carriedBytes / steps).toFixed(0)} B/step; final state key ${f.stateKeyBytes} B in Redis`,
      );
    }
    const ratio = (f: Figures, withResults: boolean) =>
      (f.checkpointBytes + (withResults ? f.resultBytes : 0)) / f.carriedBytes;
    const targets = [
      target('checkpoint bytes / carried bytes (delta)', ratio(delta, false), '<=', 1.3),
      target('+ results hash writes / carried (delta)', ratio(delta, true), '<=', 1.3),
    ];
    console.log(
      `  the whole-state format, same run: checkpoints ${ratio(whole, false).toFixed(2)}×, ` +
        `with the results hash ${ratio(whole, true).toFixed(2)}× the carried bytes`,
    );
    console.log('targets (per step and in total alike: every step carries the same)');
    for (const t of targets) console.log(`  ${formatTarget(t)}`);
  } finally {
    await deleteByPrefix(redis, prefix);
    await redis.quit();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
