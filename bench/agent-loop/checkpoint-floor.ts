import type { Keys } from '@agent-reach/protocol';
import { callLedgerEntry, type RedisClient } from '@agent-reach/shared';
import type { RunEvent, RunState } from '@agent-reach/scheduler';

/**
 * The least a checkpoint can be and still keep the design's guarantees (the floor the platform's
 * checkpoints are measured against): one script per checkpoint that checks the writer's ownership epoch
 * and step number, appends the step as one stream entry (its new messages, its events and what changed
 * of the state, so followers read it as it happens and a resume can fold it), moves the step number on
 * with the run's fields executors verify a call against (its agent and status, when they changed), and
 * records the turn's calls in the ledger executors verify against. No listing, no message count,
 * no compaction, no references: each step's record is one JSON line, as short as `JSON.stringify` makes
 * it. A run's claim is one `HINCRBY` of its epoch; its end gives its three keys their TTL.
 */
const FLOOR_LUA = `
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'seq')
if cur[1] ~= ARGV[1] then return 'fenced' end
if tonumber(cur[2] or '0') >= tonumber(ARGV[2]) then return 'dup' end
redis.call('XADD', KEYS[2], '*', 's', ARGV[3])
local n = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'seq', ARGV[2], unpack(ARGV, 6, 5 + n))
if #ARGV > 5 + n then redis.call('HSET', KEYS[3], unpack(ARGV, 6 + n)) end
if ARGV[4] ~= '0' then for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[4]) end end
return 'ok'
`;

type FloorCommand = (...keysAndArgs: Array<string | number>) => Promise<string>;

/** The floor checkpoint hook of one run: claim first (`claim`), then one `write` per checkpoint. */
export function floorCheckpoints(redis: RedisClient, keys: Keys) {
  const commands = redis as unknown as Record<string, FloorCommand | undefined>;
  if (!commands.benchFloorCheckpoint)
    redis.defineCommand('benchFloorCheckpoint', { numberOfKeys: 3, lua: FLOOR_LUA });
  const script = (redis as unknown as { benchFloorCheckpoint: FloorCommand }).benchFloorCheckpoint;
  return async (runId: string) => {
    const epoch = await redis.hincrby(keys.runMeta(runId), 'epoch', 1);
    let seq = 0;
    let messages = 0;
    let steps = 0;
    let listed = '';
    const ledgered = new Set<string>();
    return (state: RunState, events: RunEvent[]) => {
      // Snapshotted now, as the platform's checkpoint is.
      const fresh = state.messages.slice(messages);
      messages = state.messages.length;
      const calls: string[] = [];
      for (const m of fresh)
        for (const c of m.role === 'assistant' ? (m.tool_calls ?? []) : [])
          if (c.type === 'function' && !ledgered.has(c.id)) {
            ledgered.add(c.id);
            calls.push(
              c.id,
              callLedgerEntry({ agent: state.agent, name: c.function.name, arguments: c.function.arguments }),
            );
          }
      // What changed of the state: its counters and status, the steps appended, the plan.
      const line = JSON.stringify({
        m: fresh,
        e: events,
        s: { status: state.status, iterations: state.iterations, usage: state.usage, plan: state.plan },
        steps: state.steps.slice(steps),
      });
      steps = state.steps.length;
      const run = `${state.agent} ${state.status}`;
      const meta = run === listed ? [] : ['runId', state.runId, 'agent', state.agent, 'status', state.status];
      listed = run;
      const args = [epoch, (seq += 1), line, state.outcome ? 604_800 : 0, meta.length, ...meta, ...calls];
      return async () => {
        const verdict = await script.call(
          redis,
          keys.runMeta(runId),
          keys.runEvents(runId),
          keys.runCalls(runId),
          ...args,
        );
        if (verdict === 'fenced') throw new Error(`run ${runId}: fenced`);
      };
    };
  };
}
