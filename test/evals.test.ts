import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, Outbox, type Archiver } from '@agent-reach/archive';
import { evalCommand, parseDataset, type EvalIo } from '@agent-reach/evals';
import { MAX_EVAL_REPORT_BYTES, type EvalReport } from '@agent-reach/protocol';
import { RunControl } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import { loadConfig } from '@agent-reach/shared';
import { FULL_KEY, request, startApiHarness, TEST_MODELS, type ApiHarness } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { cliArgs } from './helpers/node-run.js';
import { startTestArchiver, testDatabase } from './helpers/postgres.js';
import { waitFor } from './helpers/redis.js';

/** llm-sim scenarios the cases name as their model: a weather lookup, one healed, one with a typo. */
const SCENARIOS = [
  {
    name: 'eval-weather',
    turns: [
      { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州' } }] },
      { content: 'Hangzhou: {{ last.content.forecast.0.condition }}' },
    ],
  },
  {
    name: 'eval-healing',
    turns: [
      { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州省' } }] },
      { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州' } }] },
      { content: 'Hangzhou: {{ last.content.forecast.0.condition }}' },
    ],
  },
  {
    name: 'eval-typo',
    turns: [
      { tool_calls: [{ name: 'qurey_weather', arguments: { city: '杭州' } }] },
      { content: 'I could not check the weather.' },
    ],
  },
  { name: 'eval-slow', latency_ms: 20_000, turns: [{ content: 'too late' }] },
  {
    name: 'eval-approval',
    turns: [{ tool_calls: [{ name: 'needs_approval', arguments: {} }] }, { content: 'approved' }],
  },
  // Its answer says how many answers the conversation held before it.
  { name: 'eval-session', turns: [{ content: 'a fresh conversation' }, { content: 'one answer before' }] },
  { name: 'eval-judge-high', turns: [{ content: '{"score": 0.9, "reason": "names the condition"}' }] },
  { name: 'eval-judge-low', turns: [{ content: '{"score": 0.2, "reason": "too vague"}' }] },
];
const MODELS = [...TEST_MODELS, ...SCENARIOS.map((s) => s.name)];

/** Four cases: three pass on the baseline (one after healing its arguments), one never does. */
const DATASET = `name: weather-reach
agent: test_agent
cases:
  - id: hangzhou
    input: 杭州周末天气怎么样
    model: eval-weather
    expect:
      tools_called: [query_weather]
      arguments: { query_weather: { city: 杭州 } }
      answer: { contains: Hangzhou }
      status: succeeded
      max_steps: 3
  - id: healed
    input: 杭州省周末天气
    model: eval-healing
    expect:
      tools_in_order: [query_weather]
      arguments: { query_weather: { city: 杭州 } }
      answer: { regex: '^Hangzhou: ' }
  - id: greeting
    input: say hello
    model: echo
    expect:
      tools_not_called: [query_weather]
      answer: { contains: hello }
  - id: snow
    input: 杭州会下雪吗
    model: eval-weather
    expect:
      answer: { contains: snow }
`;

/** The command in this process, its output captured. */
async function evalHere(url: string, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: EvalIo = { out: (t) => out.push(t), err: (t) => err.push(t) };
  const code = await evalCommand(args, { AGENT_REACH_URL: url, AGENT_REACH_KEY: FULL_KEY }, io);
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('agent-reach eval: datasets run on the fleet, scored, compared between variants (real Redis, llm-sim)', () => {
  let h: ApiHarness;
  let dir: string;
  let dataset: string;

  beforeAll(async () => {
    h = await startApiHarness({ allowedModels: MODELS, rateLimitPerMinute: 10_000 });
    for (const s of SCENARIOS) h.sim.addScenario(s);
    dir = await mkdtemp(path.join(tmpdir(), 'evals-'));
    dataset = path.join(dir, 'weather.yaml');
    await writeFile(dataset, DATASET);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('runs every case per variant as tagged runs, reports each expectation, the flipped cases and stores the report', async () => {
    const out = path.join(dir, 'report.json');
    const cli = await runCli({ AGENT_REACH_URL: h.url, AGENT_REACH_KEY: FULL_KEY }, [
      'eval',
      dataset,
      '--variant',
      'baseline',
      '--variant',
      'typo={"model":"eval-typo"}',
      '--concurrency',
      '3',
      '--out',
      out,
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    const report = JSON.parse(await readFile(out, 'utf8')) as EvalReport;
    const [baseline, typo] = report.variants;
    const passed = (v: typeof baseline) =>
      Object.fromEntries(v!.cases.map((c) => [c.id, c.attempts[0]!.passed]));
    expect(passed(baseline)).toEqual({ hangzhou: true, healed: true, greeting: true, snow: false });
    expect(passed(typo)).toEqual({ hangzhou: false, healed: false, greeting: false, snow: false });
    const snow = baseline!.cases.find((c) => c.id === 'snow')!.attempts[0]!;
    expect(snow.failures).toEqual([
      { check: 'answer_contains', message: 'the answer does not contain "snow"' },
    ]);
    const typoHangzhou = typo!.cases.find((c) => c.id === 'hangzhou')!.attempts[0]!;
    expect(typoHangzhou.failures).toEqual([
      { check: 'tools_called', message: 'not called: query_weather (called: none)' },
      { check: 'arguments', message: 'query_weather: no successful call to check' },
      { check: 'status', message: 'status failed, expected succeeded' },
      { check: 'answer_contains', message: 'the answer does not contain "Hangzhou"' },
    ]);
    expect(baseline!.metrics).toMatchObject({
      reach_success: 0.75,
      self_healed_args: 1,
      unknown_tool_calls: 0,
      counts: { first_try_valid_args: [3, 4], self_healed_args: [1, 1] },
    });
    expect(typo!.metrics).toMatchObject({ reach_success: 0, unknown_tool_calls: 4 });
    const comparison = report.comparisons[0]!;
    expect(comparison.metrics.reach_success).toMatchObject({ baseline: 0.75, variant: 0, diff: -0.75 });
    expect(comparison.metrics.reach_success!.high!).toBeLessThan(0);
    expect(comparison.flipped.map((f) => [f.case, f.from, f.to])).toEqual([
      ['hangzhou', 'pass', 'fail'],
      ['healed', 'pass', 'fail'],
      ['greeting', 'pass', 'fail'],
    ]);
    // Every run is an ordinary run of the fleet, tagged with the eval, its variant and its case.
    const flippedRun = comparison.flipped[0]!.variant_runs[0]!;
    const run = await h.client.getRun(flippedRun);
    expect(run.metadata).toEqual({ eval: report.id, eval_variant: 'typo', eval_case: 'hangzhou' });
    const tagged = await h.client.listRuns({ metadata: { eval: report.id }, limit: 50 });
    expect(tagged.runs).toHaveLength(8);
    // The terminal table went to stdout, with the stored report's id.
    expect(cli.stdout).toMatch(/^reach_success\s+75\.0% \(3\/4\)\s+0\.0% \(0\/4\)\s+-75\.0% \[/m);
    expect(cli.stdout).toContain(`eval ${report.id} stored: ${h.url}/v1/evals/${report.id}`);
    const stored = await h.call('GET', `/v1/evals/${report.id}`);
    expect(stored.status).toBe(200);
    expect(stored.json).toEqual(report);
    const list = await h.call('GET', '/v1/evals');
    expect(list.json.evals).toContainEqual({
      id: report.id,
      dataset: 'weather-reach',
      started_at: report.started_at,
      finished_at: report.finished_at,
      variants: [
        { name: 'baseline', reach_success: 0.75 },
        { name: 'typo', reach_success: 0 },
      ],
    });
  });

  it('gives a CI gate its exit code: 1 when a metric is under its floor or regressed, 0 when every gate holds (over repeats)', async () => {
    const under = await evalHere(h.url, [dataset, '--fail-under', 'reach_success=90%', '--no-upload']);
    expect(under.code, under.stderr).toBe(1);
    expect(under.stderr).toContain('gate failed: reach_success of baseline is 75.0%, under 90.0%');
    const holds = await evalHere(h.url, [
      dataset,
      '--fail-under',
      'reach_success=0.7',
      '--repeat',
      '2',
      '--format',
      'json',
      '--no-upload',
    ]);
    expect(holds.code, holds.stderr).toBe(0);
    const repeated = (JSON.parse(holds.stdout) as EvalReport).variants[0]!;
    expect(repeated.metrics).toMatchObject({ cases: 4, attempts: 8, reach_success: 0.75 });
    // Each repeat is a run of its own.
    expect(new Set(repeated.cases.flatMap((c) => c.attempts.map((a) => a.run_id))).size).toBe(8);
    const regressed = await evalHere(h.url, [
      dataset,
      '--variant',
      'baseline',
      '--variant',
      'typo={"model":"eval-typo"}',
      '--max-regression',
      'reach_success=0.5',
      '--max-regression',
      'unknown_tool_calls=5',
      '--format',
      'junit',
      '--no-upload',
    ]);
    expect(regressed.code, regressed.stderr).toBe(1);
    expect(regressed.stderr).toContain(
      'gate failed: reach_success of typo regressed by 75.0% from baseline (75.0% → 0.0%), more than 50.0%',
    );
    expect(regressed.stderr).not.toContain('unknown_tool_calls');
    expect(regressed.stdout).toContain('<testsuite name="weather-reach.typo" tests="4" failures="4"');
  });

  it("sends a variant's overrides as the run's variant, kept with each run, and stops with exit 2 on one the API refuses", async () => {
    const res = await evalHere(h.url, [
      dataset,
      '--variant',
      'tight={"max_iterations": 6, "tools": {"query_weather": {"description": "Weekend weather of a bare city name"}}}',
      '--format',
      'json',
      '--no-upload',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as EvalReport;
    expect(report.variants[0]!.metrics.reach_success).toBe(0.75);
    const run = await h.client.getRun(report.variants[0]!.cases[0]!.attempts[0]!.run_id);
    expect(run.variant).toEqual({
      name: 'tight',
      overrides: {
        max_iterations: 6,
        tools: { query_weather: { description: 'Weekend weather of a bare city name' } },
      },
    });
    const refused = await evalHere(h.url, [dataset, '--variant', 'odd={"max_iteration": 6}', '--no-upload']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /variant "odd": the platform refused the run: VALIDATION_FAILED: .*max_iteration/,
    );
  });

  it("runs a case's history first in one session, fails (and cancels) a run that outlives --run-timeout, scores a parked run as it stands", async () => {
    const file = path.join(dir, 'session.yaml');
    await writeFile(
      file,
      `agent: test_agent
cases:
  - id: follow-up
    input: and Sunday?
    history: [杭州周末天气]
    model: eval-session
    expect: { answer: { contains: one answer before } }
  - { id: slow, input: take your time, model: eval-slow }
  - id: parked
    input: do the sensitive thing
    model: eval-approval
    expect: { status: awaiting_approval, tools_not_called: [noop] }
`,
    );
    const res = await evalHere(h.url, [file, '--run-timeout', '1500', '--format', 'json', '--no-upload']);
    expect(res.code, res.stderr).toBe(0);
    const cases = (JSON.parse(res.stdout) as EvalReport).variants[0]!.cases;
    const followUp = await h.client.getRun(cases[0]!.attempts[0]!.run_id);
    expect(cases[0]!.attempts[0]!.passed).toBe(true);
    const session = await h.call('GET', `/v1/sessions/${followUp.session_id}`);
    expect(session.json.runs).toHaveLength(2);
    const slow = cases[1]!.attempts[0]!;
    expect(slow).toMatchObject({ passed: false, failures: [{ check: 'run_timeout' }] });
    expect(slow.run_id).not.toBe('');
    await waitFor(
      async () => (await h.client.getRun(slow.run_id)).status === 'cancelled',
      15_000,
      'the timed-out run to be cancelled',
    );
    // A run parked for an approval is scored as it stands (no one is there to approve), then cancelled.
    const parked = cases[2]!.attempts[0]!;
    expect(parked).toMatchObject({ passed: true, facts: { status: 'awaiting_approval' } });
    await waitFor(
      async () => (await h.client.getRun(parked.run_id)).status === 'cancelled',
      15_000,
      'the parked run to be cancelled',
    );
  });

  it('stops on SIGINT with exit 130, cancelling the runs it has in flight and starting no more', async () => {
    const file = path.join(dir, 'slow.yaml');
    await writeFile(
      file,
      `agent: test_agent\ncases:\n${[1, 2, 3].map((i) => `  - { id: interrupted-${i}, input: wait, model: eval-slow }`).join('\n')}\n`,
    );
    const child = spawn('node', cliArgs(['eval', file, '--concurrency', '2', '--no-upload']), {
      env: { ...process.env, LOG_LEVEL: 'warn', AGENT_REACH_URL: h.url, AGENT_REACH_KEY: FULL_KEY },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = once(child, 'exit');
    const inFlight = async () =>
      (
        await Promise.all(
          [1, 2, 3].map((i) => h.client.listRuns({ metadata: { eval_case: `interrupted-${i}` } })),
        )
      ).flatMap((l) => l.runs);
    try {
      await waitFor(
        async () => (await inFlight()).filter((r) => r.status === 'running').length === 2,
        30_000,
        'two runs in flight',
      );
      child.kill('SIGINT');
      const [code] = await exited;
      expect(code, stderr).toBe(130);
      expect(stderr).toContain('interrupted: 2 run(s) in flight cancelled');
      const runs = await inFlight();
      expect(runs).toHaveLength(2);
      await waitFor(
        async () =>
          (await Promise.all(runs.map((r) => h.client.getRun(r.run_id)))).every(
            (r) => r.status === 'cancelled',
          ),
        15_000,
        'the interrupted runs to be cancelled',
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses a dataset that does not validate with exit 2, naming each case, field and line', async () => {
    const bad = path.join(dir, 'bad.yaml');
    await writeFile(
      bad,
      'agent: test_agent\ncases:\n  - id: a\n    input: x\n    expect: { tools_caled: [x] }\n  - id: b\n    expect: { max_steps: many }\n',
    );
    const cli = await runCli({ AGENT_REACH_URL: h.url, AGENT_REACH_KEY: FULL_KEY }, ['eval', bad]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain(
      `problem: ${bad}: case "a" (line 5): expect: must NOT have additional properties "tools_caled"`,
    );
    expect(cli.stderr).toContain(
      `problem: ${bad}: case "b" (line 6): (the case): must have required property 'input'`,
    );
    expect(cli.stderr).toContain(`problem: ${bad}: case "b" (line 7): expect.max_steps: must be integer`);
    const usage = await evalHere(h.url, [dataset, '--fail-under', 'reach=1']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/unknown metric "reach"/);
  });

  it('refuses a dataset whose answer or argument regex could backtrack catastrophically, naming the case and field, with exit 2 and no run started', async () => {
    const file = path.join(dir, 'redos.yaml');
    await writeFile(
      file,
      [
        'agent: test_agent',
        'cases:',
        '  - id: nested',
        '    input: hello',
        "    expect: { answer: { regex: '^(a+)+$' } }",
        '  - id: args',
        '    input: hello',
        "    expect: { arguments: { query_weather: { city: { regex: '(x*)*y' } } } }",
        '  - id: fine',
        '    input: hello',
        "    expect: { answer: { regex: '^he(l+)o$' } }",
        '',
      ].join('\n'),
    );
    const runs = async () => (await h.call('GET', '/v1/runs?metadata=eval_case=nested')).json.runs.length;
    const cli = await evalHere(h.url, [file]);
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain(
      `${file}: case "nested" (line 5): expect.answer.regex: regex /^(a+)+$/ may take exponential time`,
    );
    expect(cli.stderr).toContain(
      'case "args" (line 8): expect.arguments.query_weather.city.regex: regex /(x*)*y/ may take exponential time',
    );
    expect(cli.stderr).not.toContain('case "fine"');
    expect(await runs()).toBe(0);
  });

  it('stops with exit 2 when the platform refuses a run of the dataset, naming the case and the code', async () => {
    const unknown = path.join(dir, 'unknown-agent.jsonl');
    await writeFile(unknown, '{"id":"x","input":"hi","agent":"no_such_agent"}\n');
    const res = await evalHere(h.url, [unknown, '--no-upload']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/case "x", variant "baseline": the platform refused the run: UNKNOWN_AGENT/);
  });

  it("asks a judge only about answers that passed the checks, and fails the attempt under the judge's floor", async () => {
    const judged = path.join(dir, 'judged.yaml');
    await writeFile(
      judged,
      `agent: test_agent
cases:
  - id: praised
    input: 杭州周末天气
    model: eval-weather
    judge: { agent: test_agent, model: eval-judge-high, rubric: names the condition }
  - id: panned
    input: 杭州周末天气
    model: eval-weather
    judge: { agent: test_agent, model: eval-judge-low, rubric: names the condition, min_score: 0.5 }
  - id: failed-first
    input: 杭州周末天气
    model: eval-weather
    expect: { answer: { contains: snow } }
    judge: { agent: test_agent, model: eval-judge-high, rubric: names the condition }
`,
    );
    const res = await evalHere(h.url, [judged, '--format', 'json', '--no-upload']);
    expect(res.code, res.stderr).toBe(0);
    const cases = (JSON.parse(res.stdout) as EvalReport).variants[0]!.cases;
    const a = (id: string) => cases.find((c) => c.id === id)!.attempts[0]!;
    expect(a('praised')).toMatchObject({
      passed: true,
      judge: { score: 0.9, reason: 'names the condition' },
    });
    expect(a('panned')).toMatchObject({
      passed: false,
      judge: { score: 0.2 },
      failures: [{ check: 'judge', message: 'score 0.2 below 0.5: too vague' }],
    });
    expect(a('failed-first').judge).toBeUndefined();
    expect(a('failed-first').failures.map((f) => f.check)).toEqual(['answer_contains']);
  });

  it('waits out a tenant quota (429) instead of failing cases, running every case with more concurrency than the quota', async () => {
    const quota = await h.extraServer({
      allowedModels: MODELS,
      tenantQuotas: [{ tenant: 'default', maxRunsInFlight: 1 }],
    });
    try {
      const out: string[] = [];
      const code = await evalCommand(
        [dataset, '--concurrency', '4', '--format', 'json', '--no-upload'],
        { AGENT_REACH_URL: quota.url, AGENT_REACH_KEY: FULL_KEY },
        { out: (t) => out.push(t), err: () => {} },
      );
      expect(code).toBe(0);
      const report = JSON.parse(out.join('\n')) as EvalReport;
      expect(report.variants[0]!.metrics).toMatchObject({ attempts: 4, reach_success: 0.75 });
      expect(report.variants[0]!.cases.every((c) => c.attempts[0]!.run_id !== '')).toBe(true);
    } finally {
      await quota.close();
    }
  });
});

/** A minimal report of one variant and one case, as the command uploads it. */
function minimalReport(id: string, extra: Partial<EvalReport> = {}): EvalReport {
  const metrics = {
    cases: 1,
    attempts: 1,
    reach_success: 1,
    tool_selection_accuracy: 1,
    first_try_valid_args: 1,
    self_healed_args: 0,
    unknown_tool_calls: 0,
    forbidden_calls: 0,
    task_completion: 1,
    steps_mean: 1,
    tokens_total: 10,
    cost_total: 0,
    latency_p50_ms: 5,
    latency_p95_ms: 5,
  };
  return {
    id,
    dataset: { name: 'tiny', cases: 1 },
    started_at: '2026-01-01T00:00:00.000Z',
    finished_at: '2026-01-01T00:00:01.000Z',
    repeat: 1,
    concurrency: 1,
    variants: [
      {
        name: 'baseline',
        overrides: {},
        metrics,
        cases: [
          {
            id: 'a',
            attempts: [
              { run_id: 'r1', passed: true, failures: [], steps: 1, tokens: 10, cost: 0, latency_ms: 5 },
            ],
          },
        ],
      },
    ],
    comparisons: [],
    ...extra,
  };
}

describe('/v1/evals: eval reports stored per tenant (real Redis)', () => {
  const ACME = 'acme-key-0123456789abcdef';
  const GLOBEX = 'globex-key-0123456789abcdef';
  const ACME_WEATHER = 'acme-weather-key-0123456789abcdef';
  let h: ApiHarness;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    h = await startApiHarness();
    const server = await h.extraServer({
      apiKeys: [
        { key: ACME, name: 'acme', tenants: ['acme'] },
        { key: GLOBEX, name: 'globex', tenants: ['globex'] },
        { key: ACME_WEATHER, name: 'acme-weather', tenants: ['acme'], agents: ['weather_only'] },
      ],
    });
    url = server.url;
    close = () => server.close();
  });
  afterAll(async () => {
    await close?.();
    await h?.close();
  });

  it("shows a tenant its own evals only, and refuses to overwrite another tenant's id", async () => {
    const stored = await request(url, 'POST', '/v1/evals', { key: ACME, body: minimalReport('ev_acme_1') });
    expect(stored.status, stored.text).toBe(201);
    expect(stored.json).toEqual({ id: 'ev_acme_1' });
    expect((await request(url, 'GET', '/v1/evals/ev_acme_1', { key: ACME })).json.dataset).toEqual({
      name: 'tiny',
      cases: 1,
    });
    expect((await request(url, 'GET', '/v1/evals/ev_acme_1', { key: GLOBEX })).status).toBe(404);
    expect((await request(url, 'GET', '/v1/evals', { key: GLOBEX })).json).toEqual({ evals: [] });
    expect(
      (await request(url, 'GET', '/v1/evals', { key: ACME })).json.evals.map((e: { id: string }) => e.id),
    ).toEqual(['ev_acme_1']);
    const taken = await request(url, 'POST', '/v1/evals', { key: GLOBEX, body: minimalReport('ev_acme_1') });
    expect(taken.status).toBe(409);
    expect(taken.json.error.code).toBe('CONFLICT');
    // The same tenant may store the id again (a retried upload): the report is replaced.
    const again = await request(url, 'POST', '/v1/evals', {
      key: ACME,
      body: minimalReport('ev_acme_1', { dataset: { name: 'tiny-2', cases: 1 } }),
    });
    expect(again.status).toBe(201);
    expect((await request(url, 'GET', '/v1/evals/ev_acme_1', { key: ACME })).json.dataset.name).toBe(
      'tiny-2',
    );
    expect(await h.producer.ttl(h.keys.evalReport('ev_acme_1'))).toBeGreaterThan(6 * 24 * 3600);
  });

  it('shows a key limited to some agents only the evals whose runs are all of its agents', async () => {
    const weather = minimalReport('ev_weather', {
      dataset: { name: 'w', cases: 1, agents: ['weather_only'] },
    });
    const mixed = minimalReport('ev_mixed', {
      dataset: { name: 'm', cases: 1, agents: ['test_agent', 'weather_only'] },
    });
    expect((await request(url, 'POST', '/v1/evals', { key: ACME, body: mixed })).status).toBe(201);
    const own = await request(url, 'POST', '/v1/evals', { key: ACME_WEATHER, body: weather });
    expect(own.status, own.text).toBe(201);
    const listed = await request(url, 'GET', '/v1/evals', { key: ACME_WEATHER });
    expect(listed.json.evals.map((e: { id: string }) => e.id)).toEqual(['ev_weather']);
    expect((await request(url, 'GET', '/v1/evals/ev_mixed', { key: ACME_WEATHER })).status).toBe(404);
    expect((await request(url, 'GET', '/v1/evals/ev_weather', { key: ACME })).status).toBe(200);
    const other = await request(url, 'POST', '/v1/evals', {
      key: ACME_WEATHER,
      body: minimalReport('ev_x', { dataset: mixed.dataset }),
    });
    expect(other.status).toBe(403);
    expect(other.json.error.message).toBe('this key may not use agent test_agent');
    const unnamed = await request(url, 'POST', '/v1/evals', {
      key: ACME_WEATHER,
      body: minimalReport('ev_y'),
    });
    expect(unnamed.status).toBe(403);
    expect(unnamed.json.error.message).toMatch(/must name the agents of its eval/);
  });

  it('refuses with 409 a key limited to some agents storing the id of an eval of its tenant that it may not read, and keeps that report as it was', async () => {
    const post = (key: string, body: EvalReport) => request(url, 'POST', '/v1/evals', { key, body });
    const named = (name: string, agents?: string[]) => ({
      dataset: { name, cases: 1, ...(agents ? { agents } : {}) },
    });
    expect(
      (await post(ACME, minimalReport('ev_taken_mixed', named('mixed', ['test_agent', 'weather_only']))))
        .status,
    ).toBe(201);
    expect((await post(ACME, minimalReport('ev_taken_unnamed', named('unnamed')))).status).toBe(201);
    for (const id of ['ev_taken_mixed', 'ev_taken_unnamed']) {
      const over = await post(ACME_WEATHER, minimalReport(id, named('overwritten', ['weather_only'])));
      expect(over.status, over.text).toBe(409);
      expect(over.json.error.code).toBe('CONFLICT');
      expect(over.json.error.message).toContain(`eval ${id} is already stored`);
      const kept = await request(url, 'GET', `/v1/evals/${id}`, { key: ACME });
      expect(kept.json.dataset.name).not.toBe('overwritten');
    }
    // Its own eval it may store again; another tenant still may not take the id.
    expect((await post(ACME_WEATHER, minimalReport('ev_own', named('own', ['weather_only'])))).status).toBe(
      201,
    );
    expect((await post(ACME_WEATHER, minimalReport('ev_own', named('own-2', ['weather_only'])))).status).toBe(
      201,
    );
    expect((await post(GLOBEX, minimalReport('ev_own'))).status).toBe(409);
    expect((await request(url, 'GET', '/v1/evals/ev_own', { key: ACME })).json.dataset.name).toBe('own-2');
  });

  it("gives an id to one tenant only when two tenants store it at the same time: the other gets 409 and the stored report is the winner's", async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `ev_race_${i}`);
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const post = (key: string) => request(url, 'POST', '/v1/evals', { key, body: minimalReport(id) });
        const [acme, globex] = await Promise.all([post(ACME), post(GLOBEX)]);
        return { id, acme: acme.status, globex: globex.status };
      }),
    );
    for (const { id, acme, globex } of outcomes) {
      expect([acme, globex].sort(), id).toEqual([201, 409]);
      const winner = acme === 201 ? ACME : GLOBEX;
      const loser = acme === 201 ? GLOBEX : ACME;
      expect((await request(url, 'GET', `/v1/evals/${id}`, { key: winner })).status).toBe(200);
      expect((await request(url, 'GET', `/v1/evals/${id}`, { key: loser })).status).toBe(404);
    }
  });

  it("keeps a tenant's 200 newest reports: storing more drops the oldest, report and listing, and no other tenant's", async () => {
    const ids = Array.from({ length: 205 }, (_, i) => `ev_cap_${String(i).padStart(3, '0')}`);
    for (const id of ids)
      expect((await request(url, 'POST', '/v1/evals', { key: GLOBEX, body: minimalReport(id) })).status).toBe(
        201,
      );
    expect(await h.producer.zcard(h.keys.evalIndex('globex'))).toBe(200);
    for (const id of ids.slice(0, 5)) {
      expect((await request(url, 'GET', `/v1/evals/${id}`, { key: GLOBEX })).status).toBe(404);
      expect(await h.producer.exists(h.keys.evalReport(id))).toBe(0);
    }
    expect((await request(url, 'GET', '/v1/evals/ev_cap_204', { key: GLOBEX })).status).toBe(200);
    expect((await request(url, 'GET', '/v1/evals/ev_acme_1', { key: ACME })).status).toBe(200);
  });

  it('refuses two API keys of one name, in the configuration and at the API, since callbacks, their secret and dead letters belong to a key by name', async () => {
    await expect(
      h.extraServer({
        apiKeys: [
          { key: ACME, name: 'ci', tenants: ['acme'] },
          { key: GLOBEX, name: 'ci', tenants: ['globex'] },
        ],
      }),
    ).rejects.toThrow('apiKeys[1].name "ci" is the name of apiKeys[0] too');
    expect(() =>
      loadConfig({ API_KEYS: `ci:${ACME}:*:acme,ci:${GLOBEX}:*:globex`, AGENTS_FILE: 'agents.yaml' }),
    ).toThrow('API_KEYS names "ci" twice');
  });

  it('refuses a report that is malformed, names the field, and one over 2 MB with 413', async () => {
    const { variants: _variants, ...noVariants } = minimalReport('ev_bad');
    const missing = await request(url, 'POST', '/v1/evals', { key: ACME, body: noVariants });
    expect(missing.status).toBe(400);
    expect(missing.json.error.code).toBe('VALIDATION_FAILED');
    expect(missing.text).toContain('variants');
    const badId = await request(url, 'POST', '/v1/evals', { key: ACME, body: minimalReport('../x') });
    expect(badId.status).toBe(400);
    expect(badId.text).toContain('/id');
    const big = minimalReport('ev_big');
    big.variants[0]!.cases[0]!.attempts[0]!.failures = [
      { check: 'answer_contains', message: 'x'.repeat(MAX_EVAL_REPORT_BYTES) },
    ];
    const tooBig = await request(url, 'POST', '/v1/evals', { key: ACME, body: big });
    expect(tooBig.status).toBe(413);
    // Above the API's 1 MiB body limit for runs, within the reports' own 2 MB.
    const large = minimalReport('ev_large');
    large.variants[0]!.cases[0]!.attempts[0]!.failures = [
      { check: 'answer_contains', message: 'x'.repeat(1_500_000) },
    ];
    expect((await request(url, 'POST', '/v1/evals', { key: ACME, body: large })).status).toBe(201);
    expect((await request(url, 'GET', '/v1/evals/ev_big', { key: ACME })).status).toBe(404);
  });
});

describe('agent-reach eval --from-runs: recorded runs, archived to PostgreSQL, replayed as a dataset (real Redis, PostgreSQL, llm-sim)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let h: ApiHarness;
  let archive: OpenedRunArchive;
  let archiver: Archiver | undefined;
  let url: string;
  let close: () => Promise<void>;
  let dir: string;

  beforeAll(async () => {
    db = await testDatabase();
    await migrate(db.url);
    h = await startApiHarness(
      { allowedModels: MODELS },
      { DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '1' },
    );
    for (const s of SCENARIOS) h.sim.addScenario(s);
    archive = openRunArchive(h.config, h.producer, h.keys)!;
    const control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    const server = await h.extraServer({ allowedModels: MODELS }, { control });
    url = server.url;
    close = () => server.close();
    dir = await mkdtemp(path.join(tmpdir(), 'evals-from-runs-'));
  });
  afterAll(async () => {
    await archiver?.close();
    await close?.();
    await archive?.close();
    await h?.close();
    await db?.drop();
  });

  it('writes a dataset whose cases expect the tool path each archived run took, and the dataset passes on replay', async () => {
    const started: string[] = [];
    for (const [model, input] of [
      ['eval-healing', '杭州省周末天气'],
      ['echo', 'say hello'],
    ] as const) {
      const res = await request(url, 'POST', '/v1/runs', {
        body: { agent: 'test_agent', input, model, metadata: { batch: 'prod-1' } },
      });
      expect(res.status, res.text).toBe(201);
      started.push(res.json.run_id as string);
    }
    await waitFor(
      async () =>
        (
          await Promise.all(
            started.map(async (id) => (await request(url, 'GET', `/v1/runs/${id}`)).json.status),
          )
        ).every((s) => s === 'succeeded'),
      15_000,
      'the recorded runs to succeed',
    );
    archiver = await startTestArchiver({ redis: h.producer, keys: h.keys, databaseUrl: db.url });
    const outbox = new Outbox(h.producer, h.keys);
    await waitFor(async () => (await outbox.size()) === 0, 15_000, 'the outbox to drain');
    await waitFor(
      async () =>
        (await Promise.all(started.map((id) => h.producer.exists(h.keys.runState(id))))).every(
          (n) => n === 0,
        ),
      15_000,
      'Redis to let the archived runs go',
    );
    const refused = await evalHere(url, ['--from-runs', 'status=lost']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^problem: VALIDATION_FAILED: .*status/);
    const file = path.join(dir, 'replay.yaml');
    const env = { AGENT_REACH_URL: url, AGENT_REACH_KEY: FULL_KEY };
    const made = await runCli(env, [
      'eval',
      '--from-runs',
      'metadata=batch=prod-1&agent=test_agent',
      '--out',
      file,
      '--name',
      'prod-replay',
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toContain(`2 case(s) from recorded runs written to ${file}`);
    const dataset = parseDataset(await readFile(file, 'utf8'), file);
    expect(dataset.name).toBe('prod-replay');
    const byId = Object.fromEntries(dataset.cases.map((c) => [c.id, c]));
    expect(byId[started[0]!]).toMatchObject({
      agent: 'test_agent',
      input: '杭州省周末天气',
      metadata: { source_run: started[0] },
      expect: { tools_in_order: ['query_weather'], status: 'succeeded' },
    });
    expect(byId[started[1]!]!.expect).toEqual({ status: 'succeeded' });
    // Replayed as CI: the healing model takes the same path; a model that never calls the tool does not.
    const same = await evalHere(url, [
      file,
      '--variant',
      'same={"model":"eval-healing"}',
      '--format',
      'json',
      '--no-upload',
    ]);
    expect(same.code, same.stderr).toBe(0);
    const typo = await evalHere(url, [
      file,
      '--variant',
      'typo={"model":"eval-typo"}',
      '--fail-under',
      'reach_success=1',
      '--format',
      'json',
      '--no-upload',
    ]);
    expect(typo.code).toBe(1);
    const cases = (JSON.parse(typo.stdout) as EvalReport).variants[0]!.cases;
    expect(cases.find((c) => c.id === started[0])!.attempts[0]!.failures.map((f) => f.check)).toEqual([
      'tools_in_order',
      'status',
    ]);
  });
});
