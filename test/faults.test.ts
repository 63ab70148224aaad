import { Queue } from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { ArchiveStore, migrate, readRunRecord, toArchiveRow } from '@agent-reach/archive';
import {
  checkArchive,
  checkDeliveries,
  checkFirings,
  checkRuns,
  cleanupAll,
  createFaultArchive,
  DEFAULT_POSTGRES_URL,
  formatReport,
  historyProblems,
  faultScenarioChain,
  runInput,
  runOfRequest,
  SCENARIOS,
} from '@agent-reach/faults';
import { testRedis } from './helpers/redis.js';

/**
 * Fault injection with real processes: 2 schedulers and 2 executors as child processes on a private
 * redis-server, llm-sim as the model, runs of 6 tool calls each. Every scenario injects one fault
 * mid-load and then checks every run's records and what the model was sent (see
 * packages/faults/src/fault-check.ts); the archive's scenario runs with the archive on (an archiver in the
 * fleet, a database of its own) and checks the archive too. `pnpm faults` runs the same scenarios with
 * hundreds of runs each. Each scenario has a harness of its own (Redis, llm-sim, fleet); the next one's
 * starts once the running scenario's fleet is up, so that its start overlaps the scenario's waits.
 * This file alone: `pnpm exec vitest run test/faults.test.ts --exclude "packages/**"` (llm-sim has a
 * faults.test.ts of its own).
 */
const RUNS = 40;
const OPTIONS = { runs: RUNS, settleMs: 130_000, quietMs: 10_000 };

describe('fault injection: every run ends final, started and finished once, with a valid history; the model never sees two results for a call, nor a timeout of a call that never ran', () => {
  afterAll(cleanupAll);

  const chain = faultScenarioChain(SCENARIOS.map((scenario) => ({ scenario, options: OPTIONS })));

  for (const [i, scenario] of SCENARIOS.entries()) {
    it(`every run invariant holds when ${scenario.title}`, async () => {
      const report = await chain.run(i);
      const text = formatReport(report);
      console.log(text);
      expect(report.counts, text).toEqual({});
      // A tool of a configured MCP server is never answered as nonexistent while its server is (re)mounted:
      // its calls wait for an executor that has mounted it.
      const unknown = Object.keys(report.calls.withoutEffectByAnswer).filter((a) =>
        a.endsWith(' unknown_tool'),
      );
      expect(unknown, text).toEqual([]);
      // The MCP-served tool was in flight too, and its calls were answered: the invariants judged them.
      if (scenario.id === 'executor-killed')
        expect(report.figures['MCP tool calls the model saw answered ok'], text).toBeGreaterThan(0);
    }, 300_000);
  }
});

describe('the fault checker', () => {
  const user = { role: 'user', content: runInput('r1') };
  const calls = (...ids: string[]) => ({
    role: 'assistant',
    content: null,
    tool_calls: ids.map((id) => ({
      id,
      type: 'function',
      function: { name: 'recorded_effect', arguments: '{}' },
    })),
  });
  const tool = (id: string, content = `{"ok":true,"id":"${id}"}`) => ({
    role: 'tool',
    tool_call_id: id,
    content,
  });
  const answer = { role: 'assistant', content: 'done' };

  it('accepts a history whose every call is answered once, right after it', () => {
    expect(
      historyProblems([user, calls('a', 'b'), tool('b'), tool('a'), calls('c'), tool('c'), answer]),
    ).toEqual([]);
  });

  it('names a repeated message, an unknown or re-answered call, a call left open and a call made twice', () => {
    expect(historyProblems([user, calls('a'), tool('a'), tool('a'), answer])).toEqual([
      'messages[3] (tool) repeats messages[2]',
    ]);
    expect(historyProblems([user, calls('a'), tool('a'), tool('a', 'other'), answer])).toEqual([
      'messages[3] answers call a again',
    ]);
    expect(historyProblems([user, calls('a'), tool('x'), tool('a'), answer])).toEqual([
      'messages[2] answers unknown call x',
    ]);
    expect(historyProblems([user, calls('a', 'b'), tool('a'), calls('c'), tool('c'), tool('b')])).toEqual([
      'messages[3] (assistant) comes before the calls of messages[1] are answered: b',
      'messages[5] answers call b after a later non-tool message',
    ]);
    expect(historyProblems([user, calls('a'), tool('a'), calls('b')])).toEqual([
      'the calls of messages[3] are never answered: b',
    ]);
    expect(
      historyProblems([user, calls('a'), tool('a'), { ...calls('a'), content: 'again' }, tool('a', 'x')]),
    ).toEqual(['messages[3] makes call a again']);
  });

  it('names a finished run the archive lacks, one archived twice, and an archived record unlike the one Redis holds', async () => {
    const t = testRedis();
    const archive = await createFaultArchive(process.env.TEST_POSTGRES_URL ?? DEFAULT_POSTGRES_URL);
    try {
      await migrate(archive.url);
      const now = Date.now();
      const ids = ['missing', 'twice', 'differs', 'same'];
      for (const id of ids) {
        await t.redis.hset(t.keys.runMeta(id), {
          runId: id,
          agent: 'fault_agent',
          status: 'succeeded',
          final: '1',
          createdAt: String(now - 1000),
          updatedAt: String(now),
        });
        await t.redis.set(t.keys.runState(id), JSON.stringify({ v: 2, runId: id }));
        await t.redis.rpush(t.keys.runMessages(id), JSON.stringify(user));
        await t.redis.hset(t.keys.results(id), 'a', '{"ok":true}');
      }
      const row = async (id: string) => toArchiveRow((await readRunRecord(t.redis, t.keys, id))!);
      const store = new ArchiveStore(archive.pool);
      const twice = await row('twice');
      await store.write([
        twice,
        { ...twice, finished_ms: twice.finished_ms + 1000 },
        { ...(await row('differs')), results: {} },
        await row('same'),
      ]);
      const found = await checkArchive({ archive, redis: t.redis, keys: t.keys, runIds: ids });
      expect(found).toEqual([
        { invariant: 'not_archived', subject: 'missing', detail: '0 archived rows' },
        { invariant: 'not_archived', subject: 'twice', detail: '2 archived rows' },
        {
          invariant: 'archive_differs',
          subject: 'differs',
          detail: 'its archived results is not what Redis holds',
        },
      ]);
    } finally {
      await archive.drop();
      await t.cleanup();
    }
  });

  it('names a call the model was told did not run that started all the same, and a timeout of a call that never started', async () => {
    const t = testRedis();
    const runsQueue = new Queue('runs', { connection: t.redis, prefix: t.keys.prefix });
    try {
      const notRun = JSON.stringify({
        ok: false,
        error: { kind: 'unavailable', message: 'not run', retryable: true },
      });
      const timedOut = JSON.stringify({
        ok: false,
        error: { kind: 'timeout', message: 'late', retryable: true },
      });
      const history = [user, calls('a', 'b', 'c'), tool('a', notRun), tool('b', timedOut), tool('c', notRun)];
      await t.redis.hset(t.keys.runMeta('r1'), { status: 'succeeded', final: '1' });
      await t.redis.rpush(t.keys.runMessages('r1'), ...[...history, answer].map((m) => JSON.stringify(m)));
      const { violations } = await checkRuns({
        redis: t.redis,
        keys: t.keys,
        runIds: ['r1'],
        requests: [{ status: 200, body: { messages: history } }],
        // `a` was started once; `b` and `c` never.
        starts: new Map([['r1/a', 1]]),
        runsQueue,
      });
      expect(
        violations.filter(
          (v) => v.invariant === 'unavailable_ran' || v.invariant === 'timeout_never_started',
        ),
      ).toEqual([
        {
          invariant: 'timeout_never_started',
          subject: 'r1',
          detail: 'call b was reported as timeout ("late") but never started',
        },
        {
          invariant: 'unavailable_ran',
          subject: 'r1',
          detail: 'call a reached the model as unavailable ("not run") but started 1 time(s)',
        },
      ]);
    } finally {
      await runsQueue.close();
      await t.cleanup();
    }
  });

  it('names a run whose run.finished callback never arrived, a delivery that does not verify, and one event sent under two ids', () => {
    const got = (id: string, runId: string, verified = true) => ({
      id,
      type: verified ? 'run.finished' : '',
      runId: verified ? runId : '',
      verified,
      ...(verified ? {} : { error: 'WEBHOOK_SIGNATURE_INVALID' }),
    });
    expect(
      checkDeliveries(
        [
          got('msg_a', 'r1'),
          got('msg_a', 'r1'),
          got('msg_b', 'r2'),
          got('msg_c', 'r2'),
          got('msg_d', '', false),
        ],
        ['r1', 'r2', 'r3'],
      ),
    ).toEqual([
      { invariant: 'callback_unsigned', subject: 'msg_d', detail: 'WEBHOOK_SIGNATURE_INVALID' },
      { invariant: 'callback_id_differs', subject: 'r2 run.finished', detail: 'msg_b, msg_c' },
      { invariant: 'callback_lost', subject: 'r3', detail: 'no run.finished delivery received' },
    ]);
  });

  it('names a schedule slot that never fired, a slot with two runs, a firing not started and a linked run no firing recorded', () => {
    const t0 = Date.parse('2026-12-04T08:00:00.000Z');
    const firing = (k: number, ms = 0, outcome = 'started') => ({
      scheduled_at: t0 + k * 1000 + ms,
      outcome,
      ...(outcome === 'started' ? { run_id: `run_${k}` } : {}),
    });
    const run = (k: number, ms = 0, id = `run_${k}`) => ({ runId: id, scheduledAt: t0 + k * 1000 + ms });
    // Slots drift a few ms from the interval; slot 3 never fired; slot 4 was skipped; slot 5 has two runs.
    const firings = [firing(0), firing(1, 31), firing(2, 12), firing(4, 7, 'failed'), firing(5, 20)];
    const runs = [run(0), run(1, 31), run(2, 12), run(5, 20), run(5, 20, 'run_5b')];
    expect(checkFirings(firings, runs, 1000)).toEqual([
      {
        invariant: 'schedule_firing_doubled',
        subject: '2026-12-04T08:00:05.020Z',
        detail: '2 runs: run_5, run_5b',
      },
      {
        invariant: 'schedule_firing_lost',
        subject: '2026-12-04T08:00:03.012Z',
        detail: 'no firing and no run in this slot',
      },
      { invariant: 'schedule_firing_lost', subject: '2026-12-04T08:00:04.007Z', detail: 'recorded failed' },
      {
        invariant: 'schedule_firing_doubled',
        subject: '2026-12-04T08:00:05.020Z',
        detail: 'run run_5b is linked to the schedule but no firing recorded it',
      },
    ]);
    expect(checkFirings(firings.slice(0, 3), runs.slice(0, 3), 1000)).toEqual([]);
  });

  it('tells the run of a model request from its first user message', () => {
    expect(runOfRequest({ messages: [{ role: 'system', content: 's' }, user] })).toBe('r1');
    expect(runOfRequest({ messages: [{ role: 'user', content: 'something else' }] })).toBeUndefined();
  });
});
