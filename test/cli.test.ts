import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';
import { runCli } from './helpers/cli.js';
import { childEnv, cliArgs } from './helpers/node-run.js';

const run = promisify(execFile);

// Each CLI call is a process of its own that loads the platform: give every test room for several.
describe('agent-reach CLI: runs, replay, approvals', { timeout: 90_000 }, () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const cli = async (...args: string[]) => cliWith({}, ...args);
  const cliWith = async (env: Record<string, string>, ...args: string[]) =>
    runCli({ ...testEnv(h.prefix, h.sim), ...env }, args);
  beforeAll(async () => {
    h = await startRunsHarness({ BREAKER_FAILURE_THRESHOLD: '100' });
    h.sim.addScenario({
      name: 'flaky-once',
      turns: [
        { tool_calls: [{ name: 'flaky', arguments: { key: 'replay', failures: 4 } }] },
        { content: 'finished: {{ last.ok }}' },
      ],
    });
    h.sim.addScenario({
      name: 'cli-approval',
      turns: [{ tool_calls: [{ name: 'needs_approval', arguments: {} }] }, { content: 'decided' }],
    });
  });
  afterAll(async () => h.close());

  it('lists runs, shows one as a timeline and prints its events as JSON lines', async () => {
    const runId = await h.control.start({ agent: 'test_agent', input: 'hello cli', model: 'echo' });
    await h.control.wait(runId, 10_000);
    // Reads of a finished run: the CLI processes run side by side.
    const [ls, json, show, events] = await Promise.all([
      cli('runs', 'ls', '--agent', 'test_agent', '--status', 'succeeded'),
      cli('runs', 'ls', '--agent', 'test_agent', '--json'),
      cli('runs', 'show', runId),
      cli('runs', 'events', runId),
    ]);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toContain(runId);
    const listed = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.run_id === runId);
    expect(listed).toMatchObject({
      run_id: runId,
      agent: 'test_agent',
      status: 'succeeded',
      cancel_requested: false,
    });
    expect(Object.keys(listed ?? {}).filter((k) => /[A-Z]/.test(k))).toEqual([]);
    expect(show.stdout).toMatch(/run started: agent test_agent, model echo: hello cli/);
    expect(show.stdout).toMatch(/run finished: succeeded \(final_answer\): hello/);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; at: number; id: string });
    expect(lines[0]?.type).toBe('run_started');
    expect(lines.at(-1)?.type).toBe('run_finished');
    expect(lines.every((l) => typeof l.at === 'number' && typeof l.id === 'string')).toBe(true);
  });

  it('replays a recorded run without a model from its recorded results, and with --live --force re-runs its tools', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'flaky upstream',
      model: 'flaky-once',
    });
    const recorded = await h.control.wait(runId, 20_000);
    expect(recorded.steps[0]).toMatchObject({ tool: 'flaky', ok: false, error_kind: 'transient' });
    const requestsBefore = h.sim.requests.length;
    const attempts = () => h.redis.llen(`${h.prefix}:test:flaky:replay`);
    const attemptsBefore = await attempts();
    // The timeline, a replay from the recording and a bad usage run side by side: none executes a tool.
    const [show, replay, unlive] = await Promise.all([
      cli('runs', 'show', runId),
      cli('runs', 'replay', runId),
      cli('runs', 'replay', runId, '--force'),
    ]);
    // The executor's retries of the call, each with its outcome and duration, under the call.
    expect(show.stdout).toMatch(
      /flaky \[call_[^\]]+\] \d+ ms, [2-9] attempt\(s\).*\n {12} {4}attempts: 1 transient \d+ ms, 2 transient \d+ ms/,
    );
    expect(unlive.code).toBe(2);
    expect(replay.stdout).toMatch(
      new RegExp(`replayed ${runId} as ${runId}\\.replay-\\d+: succeeded \\(final_answer\\)`),
    );
    expect(replay.stdout).toMatch(/tool calls answered from the recording: 1 \(nothing was executed\)/);
    expect(replay.stdout).toMatch(/every tool call had the same outcome as recorded/);
    const replayId = /as (\S+):/.exec(replay.stdout)?.[1] ?? '';
    expect((await h.control.get(replayId))?.state?.metadata).toEqual({
      replay_of: runId,
      replay_mode: 'recorded',
    });
    // Unforced, --live would answer flaky from the recording too (it is neither read-only nor idempotent).
    const forced = await cli('runs', 'replay', runId, '--live', '--force');
    expect(forced.stdout).toMatch(/tool calls executed: 1; answered from the recording: 0/);
    // The upstream has recovered since (the flaky counter is past its failures): the call now succeeds.
    expect(forced.stdout).toMatch(/differs: flaky \[call_[^\]]+\]: recorded transient, now ok/);
    expect(await attempts()).toBe(attemptsBefore + 1);
    expect(h.sim.requests.length).toBe(requestsBefore);
  }, 90_000); // three CLI processes, each loading the platform

  it('approves a parked call from the command line', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'approve via cli',
      model: 'cli-approval',
    });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'awaiting_approval',
      10_000,
      'parked',
    );
    const [pending] = Object.values((await h.control.get(runId))?.state?.approvals ?? {});
    const res = await cli('approve', runId, pending!.toolCallId, '--by', 'carol', '--reason', 'fine');
    expect(res.code).toBe(0);
    expect((await h.control.wait(runId, 10_000)).status).toBe('succeeded');
  });

  it('starts a run and follows its progress to the answer', async () => {
    h.sim.addScenario({
      name: 'cli-follow',
      // Deltas are live only (pub/sub): each turn waits long enough for the follower to be attached.
      latency_ms: 1500,
      turns: [
        { tool_calls: [{ name: 'query_weather', arguments: { city: '成都' } }] },
        { content: 'Chengdu: {{ last.content.forecast.0.condition }}' },
      ],
    });
    const res = await cli(
      'run',
      'weather in Chengdu',
      '--agent',
      'test_agent',
      '--model',
      'cli-follow',
      '--follow',
    );
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^started run_/);
    expect(res.stdout).toMatch(/ok\s+query_weather \[call_/);
    expect(res.stdout).toMatch(/answer: Chengdu: 阴/);
    // The final answer was printed as it streamed, on a line of its own, before the run ended.
    expect(res.stdout).toMatch(/^answer \(streaming\): Chengdu: 阴\n/m);
  });

  it('checks the configuration: reachable tools per agent, non-zero exit on problems', async () => {
    const [good, bad] = await Promise.all([
      cli('config', 'check'),
      run('node', cliArgs(['config', 'check']), {
        env: { ...process.env, ...childEnv({ ...testEnv(h.prefix, h.sim), TOOL_MODULES: '' }) },
      }).catch((err: { code: number; stderr: string }) => err),
    ]);
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/agent weather_only: query_weather; max_iterations default/);
    expect(good.stdout).toMatch(/needs_approval \(needs approval\)/);
    expect(good.stdout).toMatch(/no problems found/);
    expect((bad as { code: number }).code).toBe(4);
    expect((bad as { stderr: string }).stderr).toMatch(
      /agent "test_agent": tools\[\d+\] "noop" is not a registered tool/,
    );
  });

  it('shows in runs show what each call came to (ok, no_result, error), where it ran, its arguments and result, and finds runs by metadata and tool', async () => {
    h.sim.addScenario({
      name: 'cli-kinds',
      turns: [
        {
          tool_calls: [
            { name: 'query_weather', arguments: { city: '杭州' } },
            { name: 'query_order_status', arguments: { order_id: 'ORD-123000' } },
            { name: 'no_such_tool', arguments: {} },
          ],
        },
        { content: 'done' },
      ],
    });
    const tag = `cli-${Date.now()}`;
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'kinds',
      model: 'cli-kinds',
      metadata: { user_id: tag },
    });
    await h.control.wait(runId, 10_000);
    const [show, found, none, noEquals] = await Promise.all([
      cli('runs', 'show', runId),
      cli('runs', 'ls', '--metadata', `user_id=${tag}`, '--tool', 'query_order_status', '--json'),
      cli('runs', 'ls', '--metadata', `user_id=${tag}`, '--error-kind', 'timeout', '--json'),
      cli('runs', 'ls', '--metadata', 'no-equals-sign'),
    ]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(
      /ms {4}ok {8}query_weather \[\S+\] \d+ ms, 1 attempt\(s\), dispatched to executor-\S+; args \{"city":"杭州"\} → \{"city":"杭州"/m,
    );
    expect(show.stdout).toMatch(/ms {4}no_result query_order_status \[\S+\] .*dispatched to executor-/m);
    expect(show.stdout).toMatch(
      /ms {4}error {5}no_such_tool \[\S+\] 0 ms, 0 attempt\(s\), answered locally \(not dispatched\): unknown_tool: /m,
    );
    expect(show.stdout).not.toMatch(/ms {2}dispatched /);
    expect(found.code).toBe(0);
    expect(
      found.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { run_id: string }).run_id),
    ).toEqual([runId]);
    expect(none.stdout).toBe('');
    expect(noEquals.code).toBe(2);
  });

  it('exits 3 for an unknown run and 2 for bad usage, with a message', async () => {
    const [missing, bad, unknown] = await Promise.all([
      cli('runs', 'show', 'no-such-run'),
      cli('runs', 'ls', '--limit', 'many'),
      cli('frobnicate'),
    ]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/not found: run no-such-run/);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--limit must be a positive integer/);
    expect(unknown.code).toBe(2);
  });

  it('escapes control characters of the run input and the answer in runs show, and keeps them exact in runs events', async () => {
    const hostile = 'hi \u001b[2J\u001b]0;owned\u0007 \r\u202etxt.exe\u009b31m\nrun finished: forged';
    h.sim.addScenario({ name: 'cli-hostile', turns: [{ content: 'done \u001b[31mred\u0007\r\u202eok' }] });
    const runId = await h.control.start({ agent: 'test_agent', input: hostile, model: 'cli-hostile' });
    await h.control.wait(runId, 10_000);
    const [show, events] = await Promise.all([cli('runs', 'show', runId), cli('runs', 'events', runId)]);
    expect(show.code).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(show.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(show.stdout).toContain(
      'hi \\x1b[2J\\x1b]0;owned\\x07 \\r\\u202etxt.exe\\x9b31m\\nrun finished: forged',
    );
    expect(show.stdout).toContain('answer: done \\x1b[31mred\\x07\\r\\u202eok');
    // The input cannot start a line of its own in the timeline.
    expect(show.stdout).not.toMatch(/^run finished: forged/m);
    expect(events.stdout).not.toMatch(/[\u007f-\u009f\u202e]/);
    const started = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; input?: string })
      .find((e) => e.type === 'run_started');
    expect(started?.input).toBe(hostile);
  });

  it('prints the Redis URL with its password masked in config check and when Redis is unreachable', async () => {
    const [check, down] = await Promise.all([
      cliWith({ REDIS_URL: 'redis://:s3cret@127.0.0.1:6379/0' }, 'config', 'check'),
      cliWith({ REDIS_URL: 'redis://:s3cret@127.0.0.1:1' }, 'runs', 'ls'),
    ]);
    expect(check.stdout).toMatch(/config ok: redis redis:\/\/:\*\*\*@127\.0\.0\.1:6379\/0/);
    expect(check.stdout + check.stderr).not.toContain('s3cret');
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(
      /^error: Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1 did not answer within 3000 ms/,
    );
    expect(down.stderr).not.toContain('s3cret');
  });
});
