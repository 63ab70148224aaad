import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadAgents, loadWorkflows, startMetricsServer } from '@agent-reach/shared';
import { WorkflowControl } from '@agent-reach/scheduler';
import {
  ToolCatalog,
  queueSamplerLeaseKey,
  startQueueSampler,
  type QueueSampler,
} from '@agent-reach/scheduler/internal';
import {
  ROOT,
  startArchiverChild,
  startExecutorWith,
  startSchedulerChild,
  TEST_AGENTS,
  type Child,
} from './helpers/processes.js';
import {
  allPanels,
  onPath,
  parseYaml,
  run,
  startPrometheus,
  toPromQl,
  vectorSelectors,
  type DashboardPanel,
  type Prometheus,
  type PromQueryResult,
} from './helpers/prometheus.js';
import { startBillingServer } from './helpers/billing-server.js';
import { FILESYSTEM_SERVER } from './helpers/mcp.js';
import { testDatabase } from './helpers/postgres.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

const HAVE_PROMETHEUS = onPath('prometheus') && onPath('promtool');
if (!HAVE_PROMETHEUS) {
  console.warn(
    'test/observability.test.ts skipped: `prometheus` and `promtool` are not on PATH ' +
      '(Debian/Ubuntu: apt-get install -y prometheus).',
  );
}

/** The "Metric catalog" section of docs/observability.md. */
const METRIC_CATALOG = readFileSync(path.join(ROOT, 'docs/observability.md'), 'utf8')
  .split(/^## /m)
  .find((section) => section.startsWith('Metric catalog\n'));

const DEPLOY_PROMETHEUS = path.join(ROOT, 'deploy/prometheus/prometheus.yml');
const DEPLOY_ALERTS = path.join(ROOT, 'deploy/prometheus/alerts.yml');
const DASHBOARDS = [path.join(ROOT, 'deploy/grafana/dashboards/agent-reach.json')];
/** The dashboard of what the platform reaches, proven on the second workload below. */
const REACH_DASHBOARD = path.join(ROOT, 'deploy/grafana/dashboards/agent-reach-reach.json');
const SCHEDULER_JOB = 'agent-reach-scheduler';
const EXECUTOR_JOB = 'agent-reach-executor';

/**
 * The processes' settings: breakers that open after 3 failures and half-open 3 s later (so the second
 * phase sees transitions again), one LLM retry (so an LLM outage ends a run in seconds), executors that
 * serve only the default group (so a call to the "isolated" group waits unconsumed — republished at each
 * deadline for as long as the test lasts), and a 1 s queue sample for schedulers that run the sampler.
 */
/**
 * The test agents with fleet-wide limits on the default group, generous enough never to hold a call
 * back, so that the dashboard's tool-group limit panels have series to show.
 */
const AGENTS_WITH_LIMITS = path.join(
  mkdtempSync(path.join(tmpdir(), 'agent-reach-obs-agents-')),
  'agents.yaml',
);
writeFileSync(
  AGENTS_WITH_LIMITS,
  `${readFileSync(TEST_AGENTS, 'utf8')}\ntool_groups:\n  default: { concurrency: 1000, rate: { max: 100000, per_ms: 1000 } }\n`,
);

const PROCESS_ENV = {
  AGENTS_FILE: AGENTS_WITH_LIMITS,
  BREAKER_FAILURE_THRESHOLD: '3',
  BREAKER_RESET_TIMEOUT_MS: '3000',
  LLM_MAX_RETRIES: '1',
  EXECUTOR_GROUPS: 'default',
  QUEUE_SAMPLE_INTERVAL_MS: '1000',
  TOOL_START_WAIT_MS: '600000',
  WORKFLOWS_FILE: WORKFLOWS_FIXTURE,
};

/**
 * How every alert rule is proven. Each expression must evaluate (status success), and each of its vector
 * selectors (`vectorSelectors`: every `name{…}` or `{__name__…}` outside strings, functions and grouping
 * lists) must select series, since an alert expression returns data only while its condition holds.
 * Beyond that, these four fire on the workload itself; AgentReachQueueSamplerLeader, AgentReachNoExecutorUp
 * and AgentReachNoSchedulerUp are driven at the end (lease taken away, executors and schedulers stopped);
 * AgentReachToolQueueWaitHigh and AgentReachLlmErrors (thresholds that take minutes of load) are proven
 * by their selectors only.
 */
/**
 * Metrics of a process this test does not start: the archiver needs PostgreSQL and `DATABASE_URL`. Its
 * alert is still evaluated here; test/deploy.test.ts checks that each metric it names is one the archiver
 * defines, and test/archive-durability.test.ts reads the backlog gauge from a running archiver.
 */
const NOT_SCRAPED_HERE = /^agent_reach_archive_/;

/**
 * Alerts on what the platform reaches (model providers, MCP servers, tenants' cost): the first workload
 * has no providers file, MCP server or tenant, so their series are proven, and each alert driven, by the
 * second one ("reach" below).
 */
const REACH_ALERTS = [
  'AgentReachLlmProviderKeyRefused',
  'AgentReachLlmProviderBreakerOpen',
  'AgentReachAgentModelsUnavailable',
  'AgentReachMcpServerDown',
  'AgentReachTenantCostHigh',
];

const DRIVEN_ALERTS = [
  'AgentReachBreakerOpen',
  'AgentReachToolErrorsHigh',
  'AgentReachToolQueueNotConsumed',
  'AgentReachRunsNotConverging',
];

/**
 * prom-client's default Node.js gauges named `*_total` (active handles, requests, resources): the only
 * `promtool check metrics` findings allowed; the platform's own metrics must be clean.
 */
const ALLOWED_LINT =
  /^agent_reach_(executor|scheduler)_nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

interface AlertRule {
  alert: string;
  expr: string;
}

const alertRules = (): AlertRule[] =>
  (
    parseYaml(readFileSync(DEPLOY_ALERTS, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> }
  ).groups.flatMap((g) => g.rules);

const panelQueries = (dashboards = DASHBOARDS) =>
  dashboards.flatMap((file) =>
    allPanels(JSON.parse(readFileSync(file, 'utf8')) as { panels?: DashboardPanel[] }).flatMap((p) =>
      (p.targets ?? []).map((t) => ({
        panel: `${path.basename(file)}: ${p.title} [${t.refId}]`,
        expr: t.expr ?? '',
      })),
    ),
  );

const finite = (r: PromQueryResult) =>
  (r.data?.result ?? []).some((s) => Number.isFinite(Number(s.value[1])));
const describeQuery = (r: PromQueryResult) =>
  r.status === 'success'
    ? `${r.data?.result.length ?? 0} series: ${JSON.stringify(r.data?.result.slice(0, 3))}`
    : `${r.errorType}: ${r.error}`;

describe.skipIf(!HAVE_PROMETHEUS)(
  'observability against a real Prometheus: scrape configs, rules, dashboards and metrics of real processes',
  () => {
    let h: Awaited<ReturnType<typeof startRunsHarness>>;
    let children: Child[] = [];
    let executors: Child[] = [];
    let scheduler: Child;
    let sampler: QueueSampler | undefined;
    let samplerServer: { server: Server; port: number; close(): Promise<void> } | undefined;
    let prometheus: Prometheus | undefined;
    let workflows: WorkflowControl | undefined;
    let dir: string;
    /** /metrics ports of every process, by Prometheus job. */
    const ports: Record<string, number[]> = { [SCHEDULER_JOB]: [], [EXECUTOR_JOB]: [] };

    const scalar = async (expr: string) => {
      const r = await prometheus!.query(expr);
      const v = r.data?.result[0]?.value[1];
      return v === undefined ? undefined : Number(v);
    };

    /** Starts runs of the workload: every outcome, retries, breakers, guards, an LLM outage, approvals. */
    const startWorkload = async (phase: string, withIsolated: boolean) => {
      const start = (model: string, i = 0) =>
        h.control.start({ agent: 'test_agent', input: `${phase} ${model} ${i}`, model });
      const finishing = await Promise.all([
        ...[0, 1, 2].map((i) => start('obs-weather', i)),
        ...[0, 1].map((i) => start('obs-flaky', i)),
        ...[0, 1, 2, 3].map((i) => start('obs-failing', i)),
        start('obs-loop'),
        start('obs-llm-down'),
      ]);
      // Waits for an executor of its group for the whole test, like the parked run waits for a person.
      if (withIsolated) await start('obs-isolated');
      const parked = await start('obs-approval');
      // A workflow whose first node times out: the watchdog injects its default, the next node runs.
      const workflow = await workflows!.start({ workflow: 'late_with_default', input: phase });
      const outcomes = await Promise.all(finishing.map((id) => h.control.wait(id, 30_000)));
      await workflows!.wait(workflow.workflowId, 30_000);
      await waitFor(
        async () => (await h.control.get(parked))?.summary.status === 'awaiting_approval',
        15_000,
        `${phase}: the approval run to park`,
      );
      return outcomes.map((o) => o.status);
    };

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'agent-reach-prom-'));
      h = await startRunsHarness(PROCESS_ENV, { executor: false, scheduler: false });
      for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
      workflows = new WorkflowControl(
        h.producer,
        h.keys,
        loadWorkflows(WORKFLOWS_FIXTURE, loadAgents(h.config.agentsFile).agents.keys()),
      );
      h.sim.addScenario({
        name: 'obs-weather',
        plan: ['weather', 'answer'],
        turns: [
          { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州' } }] },
          { content: 'cloudy' },
        ],
      });
      h.sim.addScenario({
        name: 'obs-flaky',
        turns: [
          { tool_calls: [{ name: 'flaky', arguments: { key: '{{ user }}', failures: 1 } }] },
          { content: 'recovered after a retry' },
        ],
      });
      h.sim.addScenario({
        name: 'obs-failing',
        turns: [{ tool_calls: [{ name: 'always_failing', arguments: {} }], repeat: true }],
      });
      h.sim.addScenario({
        name: 'obs-loop',
        turns: Array.from({ length: 12 }, (_, i) => ({
          tool_calls: [{ name: 'counted_effect', arguments: { ms: i } }],
        })),
      });
      h.sim.addScenario({
        name: 'obs-llm-down',
        // On the turn, not the scenario: a failed planning request ends a run as internal_error
        // without an llm_error event (reported as a finding), which the LLM panels would not see.
        turns: [{ content: 'never answered', fault: { type: 'server_error', status: 503, times: 20 } }],
      });
      h.sim.addScenario({
        name: 'obs-approval',
        turns: [{ tool_calls: [{ name: 'needs_approval', arguments: {} }] }, { content: 'approved' }],
      });
      h.sim.addScenario({
        name: 'obs-isolated',
        turns: [
          { tool_calls: [{ name: 'isolated_echo', arguments: { value: 'nobody serves me' } }] },
          { content: 'gave up waiting' },
        ],
      });

      const env = testEnv(h.prefix, h.sim, PROCESS_ENV);
      // Executors first, so that the scheduler's catalog knows every group from its start. An executor
      // loads only the tools of its groups: one of the other groups announces theirs until the scheduler
      // has seen them, then stops (not scraped), so that calls of the "isolated" group wait unconsumed.
      executors = [startExecutorWith(env), startExecutorWith(env)];
      const others = startExecutorWith({ ...env, EXECUTOR_GROUPS: 'isolated,limited' });
      children.push(...executors, others);
      for (const e of executors) ports[EXECUTOR_JOB]!.push(Number((await e.ready).metricsPort));
      await others.ready;
      scheduler = startSchedulerChild(env);
      children.push(scheduler);
      ports[SCHEDULER_JOB]!.push(Number((await scheduler.ready).metricsPort));
      others.kill('SIGKILL');
      await others.exited;

      // A second scheduler replica's queue sampler, in this process, contending for the same lease.
      const catalog = await new ToolCatalog(h.redis, h.keys).refresh();
      const registry = new Registry();
      sampler = startQueueSampler({
        redis: h.redis,
        keys: h.keys,
        registry,
        queues: () => [
          h.keys.runsQueue,
          ...new Set(catalog.names().map((n) => h.keys.toolQueue(catalog.group(n)))),
        ],
        intervalMs: 500,
        leaseMs: 2000,
        logger: createLogger('test', { level: 'silent' }),
      });
      samplerServer = await startMetricsServer(registry, 0, '127.0.0.1');
      ports[SCHEDULER_JOB]!.push(samplerServer.port);

      // The deploy configuration's jobs and rules, with the test's processes as static targets.
      const deploy = parseYaml(readFileSync(DEPLOY_PROMETHEUS, 'utf8')) as {
        scrape_configs: Array<{ job_name: string }>;
      };
      const scrapeConfigs = deploy.scrape_configs
        .filter((c) => ports[c.job_name] !== undefined)
        .map((c) => ({
          job_name: c.job_name,
          static_configs: [{ targets: (ports[c.job_name] ?? []).map((p) => `127.0.0.1:${p}`) }],
        }));
      expect(scrapeConfigs.map((c) => c.job_name).sort()).toEqual([EXECUTOR_JOB, SCHEDULER_JOB]);
      const configFile = path.join(dir, 'prometheus.yml');
      writeFileSync(
        configFile,
        JSON.stringify({
          global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
          rule_files: [DEPLOY_ALERTS],
          scrape_configs: scrapeConfigs,
        }),
      );
      prometheus = await startPrometheus(configFile, path.join(dir, 'data'));
      await waitFor(
        async () => {
          const targets = await prometheus!.api<{ data: { activeTargets: Array<{ health: string }> } }>(
            '/api/v1/targets',
          );
          const active = targets.data.activeTargets;
          return active.length === 4 && active.every((t) => t.health === 'up');
        },
        20_000,
        'every target to be up',
      );

      // Two phases, the first scraped before the second starts, so counters and histograms increase
      // between samples and every rate, ratio and quantile has a value.
      const first = await startWorkload('first', true);
      expect(first).toEqual(expect.arrayContaining(['succeeded', 'failed', 'not_converged']));
      await waitFor(
        async () => ((await scalar('sum(agent_reach_runs_total)')) ?? 0) >= first.length,
        15_000,
        'Prometheus to scrape the first phase',
      );
      const second = await startWorkload('second', false);
      await waitFor(
        async () => ((await scalar('sum(agent_reach_runs_total)')) ?? 0) >= first.length + second.length,
        15_000,
        'Prometheus to scrape the second phase',
      );
      await waitFor(
        async () =>
          ((await scalar('sum(agent_reach_queue_jobs{queue="agent-runs", state="parked"})')) ?? 0) >= 2 &&
          ((await scalar('sum(agent_reach_queue_jobs{queue="tools-isolated", state="waiting"})')) ?? 0) >= 1,
        15_000,
        'queue depths of the parked runs and the unconsumed call',
      );
    }, 90_000);

    afterAll(async () => {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited));
      children = [];
      await sampler?.stop();
      await samplerServer?.close();
      await prometheus?.stop();
      await workflows?.close();
      await h?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      rmSync(path.dirname(AGENTS_WITH_LIMITS), { recursive: true, force: true });
    }, 30_000);

    it('passes promtool check config and check rules on the deploy files', async () => {
      const config = await run('promtool', ['check', 'config', DEPLOY_PROMETHEUS]);
      expect(config.code, config.stdout + config.stderr).toBe(0);
      expect(config.stdout).toMatch(/SUCCESS: 1 rule files found/);
      const rules = await run('promtool', ['check', 'rules', DEPLOY_ALERTS]);
      expect(rules.code, rules.stdout + rules.stderr).toBe(0);
      expect(rules.stdout).toContain(`SUCCESS: ${alertRules().length} rules found`);
    });

    it('serves /metrics from every process that promtool check metrics accepts', async () => {
      const all = [...ports[SCHEDULER_JOB]!, ...ports[EXECUTOR_JOB]!];
      expect(all).toHaveLength(4);
      for (const port of all) {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(text).toMatch(/^# HELP agent_reach_/m);
        const checked = await run('promtool', ['check', 'metrics'], text);
        const problems = (checked.stdout + checked.stderr)
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .filter((l) => !ALLOWED_LINT.test(l));
        expect(problems, `port ${port}`).toEqual([]);
        // 0 = clean, 3 = lint findings only (the allowed ones above); anything else is a parse error.
        expect([0, 3], `port ${port}`).toContain(checked.code);
      }
    });

    it('returns data for every query of every dashboard panel', async () => {
      const queries = panelQueries();
      expect(queries.length).toBeGreaterThan(20);
      const failures: string[] = [];
      for (const { panel, expr } of queries) {
        const r = await prometheus!.query(toPromQl(expr));
        if (r.status !== 'success' || !finite(r)) failures.push(`${panel}: ${expr}\n  → ${describeQuery(r)}`);
      }
      expect(failures).toEqual([]);
    });

    it('evaluates every alert expression, selects existing series with each, and drives four alerts to pending', async () => {
      const rules = alertRules();
      const failures: string[] = [];
      for (const rule of rules) {
        const r = await prometheus!.query(rule.expr);
        if (r.status !== 'success') failures.push(`${rule.alert}: ${describeQuery(r)}`);
        // An alert's expression returns data only while it fires: each vector selector in it must
        // select series, so the rule watches metrics that exist under the labels it names.
        const selectors = vectorSelectors(rule.expr);
        if (selectors.length === 0) failures.push(`${rule.alert}: no selector found in ${rule.expr}`);
        if (REACH_ALERTS.includes(rule.alert)) continue;
        for (const selector of selectors) {
          if (NOT_SCRAPED_HERE.test(selector)) continue;
          const s = await prometheus!.query(selector);
          if (s.status !== 'success' || (s.data?.result.length ?? 0) === 0)
            failures.push(`${rule.alert}: ${selector} → ${describeQuery(s)}`);
        }
        if (DRIVEN_ALERTS.includes(rule.alert) && (r.data?.result.length ?? 0) === 0)
          failures.push(`${rule.alert} should fire on this workload: ${rule.expr}`);
      }
      expect(failures).toEqual([]);
      const notConsumed = await prometheus!.query(
        rules.find((r) => r.alert === 'AgentReachToolQueueNotConsumed')!.expr,
      );
      expect(notConsumed.data?.result.map((s) => s.metric.queue)).toEqual(['tools-isolated']);
    });

    it('evaluates every rule without error in the rule engine, with the driven alerts pending', async () => {
      type Rules = {
        data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
      };
      type Alerts = { data: { alerts: Array<{ labels: { alertname: string }; state: string }> } };
      const loaded = await waitFor(
        async () => {
          const all = (await prometheus!.api<Rules>('/api/v1/rules')).data.groups.flatMap((g) => g.rules);
          return all.length === alertRules().length && all.every((r) => r.health !== 'unknown')
            ? all
            : undefined;
        },
        10_000,
        'every rule to be evaluated once',
      );
      expect(loaded.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);
      const active = await waitFor(
        async () => {
          const alerts = (await prometheus!.api<Alerts>('/api/v1/alerts')).data.alerts;
          const names = new Set(alerts.map((a) => a.labels.alertname));
          return DRIVEN_ALERTS.every((a) => names.has(a)) ? alerts : undefined;
        },
        10_000,
        'the driven alerts to become active',
      );
      expect(
        active.filter((a) => DRIVEN_ALERTS.includes(a.labels.alertname)).every((a) => a.state === 'pending'),
      ).toBe(true);
    });

    it('counts every queue once: exactly one queue sampler leads across the scheduler targets', async () => {
      expect(await scalar(`sum(agent_reach_queue_sampler_leader{job="${SCHEDULER_JOB}"})`)).toBe(1);
      const counted = await prometheus!.query('count by (queue, state) (agent_reach_queue_jobs) > 1');
      expect(counted.data?.result).toEqual([]);
      const queues = await prometheus!.query('count by (queue) (agent_reach_queue_jobs)');
      expect(queues.data?.result.map((s) => s.metric.queue).sort()).toEqual([
        'agent-runs',
        'tools-default',
        'tools-isolated',
        'tools-limited',
      ]);
    });

    it.skipIf(METRIC_CATALOG === undefined)(
      'lists every metric family the processes expose in the metric catalog of docs/observability.md, with its type',
      async () => {
        const families = new Map<string, string>();
        for (const port of [...ports[SCHEDULER_JOB]!, ...ports[EXECUTOR_JOB]!]) {
          const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1]!, m[2]!);
        }
        expect(families.size).toBeGreaterThan(40);
        const rows = (METRIC_CATALOG ?? '').split('\n').filter((l) => l.startsWith('|'));
        const missing = [...families].flatMap(([name, type]) => {
          // prom-client's defaults are listed once, as `<p>name`, for both process prefixes.
          const cell = name.replace(/^agent_reach_(executor|scheduler)_((process|nodejs)_)/, '<p>$2');
          const row = rows.find((r) => r.includes(`\`${cell}\``));
          if (!row) return [`${name}: no row for \`${cell}\``];
          return row.split('|')[2]?.trim() === type
            ? []
            : [`${name}: type ${type}, row says ${row.split('|')[2]}`];
        });
        expect(missing).toEqual([]);
      },
    );

    /** Waits until an alert's expression returns data and the rule engine holds the alert as pending. */
    const expectRaised = async (name: string) => {
      const rule = alertRules().find((r) => r.alert === name);
      expect(rule, name).toBeDefined();
      await waitFor(
        async () => ((await prometheus!.query(rule!.expr)).data?.result.length ?? 0) > 0,
        10_000,
        `${name}: its expression to return data`,
      );
      type Alerts = { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } };
      return waitFor(
        async () =>
          (await prometheus!.api<Alerts>('/api/v1/alerts')).data.alerts.find(
            (a) => a.labels.alertname === name,
          ),
        10_000,
        `${name}: the rule engine to raise it`,
      );
    };
    const isQuiet = async (name: string) =>
      ((await prometheus!.query(alertRules().find((r) => r.alert === name)!.expr)).data?.result ?? [])
        .length === 0;

    it('fires AgentReachQueueSamplerLeader while no scheduler holds the sampler lease', async () => {
      expect(await isQuiet('AgentReachQueueSamplerLeader')).toBe(true);
      const leaseKey = queueSamplerLeaseKey(h.keys);
      // A holder that is not a scheduler: every sampler must withdraw its values.
      await h.redis.set(leaseKey, 'not-a-scheduler', 'PX', 60_000);
      try {
        const alert = await expectRaised('AgentReachQueueSamplerLeader');
        expect(alert).toMatchObject({ state: 'pending', labels: { severity: 'warning' } });
        expect((await prometheus!.query('agent_reach_queue_jobs')).data?.result).toEqual([]);
      } finally {
        await h.redis.del(leaseKey);
      }
    });

    it('fires AgentReachNoExecutorUp once every executor is gone', async () => {
      expect(await isQuiet('AgentReachNoExecutorUp')).toBe(true);
      for (const e of executors) e.kill('SIGTERM');
      await Promise.all(executors.map((e) => e.exited));
      const alert = await expectRaised('AgentReachNoExecutorUp');
      expect(alert).toMatchObject({ state: 'pending', labels: { job: EXECUTOR_JOB, severity: 'critical' } });
    });

    it('fires AgentReachNoSchedulerUp once every scheduler is gone', async () => {
      expect(await isQuiet('AgentReachNoSchedulerUp')).toBe(true);
      scheduler.kill('SIGTERM');
      await scheduler.exited;
      await samplerServer?.close();
      samplerServer = undefined;
      const alert = await expectRaised('AgentReachNoSchedulerUp');
      expect(alert).toMatchObject({ state: 'pending', labels: { job: SCHEDULER_JOB, severity: 'critical' } });
    });
  },
);

/** The reach workload's API keys: an operator of the default tenant, and a desk of tenant `acme`. */
const OPS_KEY = 'ops-key-0123456789abcdef';
const ACME_KEY = 'acme-key-0123456789abcdef';
const ARCHIVER_JOB = 'agent-reach-archiver';

/** A model provider that refuses every key, as OpenAI answers one: 401 `invalid_api_key`. */
async function startRefusingProvider(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe.skipIf(!HAVE_PROMETHEUS)(
  'observability of reach against a real Prometheus: model providers, MCP servers, HTTP tools, the archive and tenants',
  () => {
    let h: Awaited<ReturnType<typeof startRunsHarness>>;
    let children: Child[] = [];
    let prometheus: Prometheus | undefined;
    let billing: Awaited<ReturnType<typeof startBillingServer>> | undefined;
    let refusing: Awaited<ReturnType<typeof startRefusingProvider>> | undefined;
    let db: Awaited<ReturnType<typeof testDatabase>> | undefined;
    let dir: string;
    let apiUrl: string;
    const ports: Record<string, number[]> = { [SCHEDULER_JOB]: [], [EXECUTOR_JOB]: [], [ARCHIVER_JOB]: [] };

    const scalar = async (expr: string) => {
      const r = await prometheus!.query(expr);
      const v = r.data?.result[0]?.value[1];
      return v === undefined ? undefined : Number(v);
    };
    /** The counters a phase moves, each scraped as its processes serve it before the next phase starts. */
    const PHASE_COUNTERS = [
      'agent_reach_tool_calls_total',
      'agent_reach_tool_call_duration_seconds_count',
      'agent_reach_openapi_responses_total',
      'agent_reach_llm_request_duration_seconds_count',
      'agent_reach_llm_provider_request_duration_seconds_count',
      'agent_reach_llm_provider_errors_total',
      'agent_reach_llm_provider_key_refused_total',
      'agent_reach_llm_turns_unanswered_total',
      'agent_reach_llm_turns_answered_total',
      'agent_reach_llm_fallbacks_total',
      'agent_reach_llm_tokens_total',
      'agent_reach_llm_cost_total',
      'agent_reach_tenant_quota_refusals_total',
      'agent_reach_child_runs_started_total',
      'agent_reach_child_runs_total',
    ];
    /** The sum of a metric's series as the processes serve it now. */
    const served = async (name: string) => {
      let total = 0;
      for (const port of Object.values(ports).flat()) {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm')))
          total += Number(m[1]);
      }
      return total;
    };
    /**
     * Waits until Prometheus holds each counter at the value the processes serve: a phase's increments are
     * scraped before the next phase moves them again, so that every rate has an increase to show.
     */
    const scrapedAsServed = async (phaseName: string) => {
      for (const name of PHASE_COUNTERS) {
        const want = await served(name);
        expect(want, `${phaseName}: ${name} served`).toBeGreaterThan(0);
        await waitFor(
          async () => ((await scalar(`sum(${name})`)) ?? -1) >= want,
          20_000,
          `${phaseName}: Prometheus to scrape ${name} at ${want}`,
        );
      }
    };
    const post = (key: string, agent: string, input: string) =>
      fetch(`${apiUrl}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent, input }),
      });
    const ended = (key: string, runId: string) =>
      waitFor(
        async () => {
          const run = (await (
            await fetch(`${apiUrl}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${key}` } })
          ).json()) as { status: string };
          return ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(run.status) ? run : undefined;
        },
        30_000,
        `run ${runId} to end`,
      );

    /**
     * One phase: acme's run of the reaching agent (its first model's provider refuses connections, its
     * fallback answers, calls MCP and HTTP tools, is priced), a second acme run refused at the tenant's
     * quota while the first is in flight, and the operator's runs of an agent whose only model is down, of
     * one whose provider refuses its key, and of one that calls the first as an agent tool (a child run).
     */
    const phase = async (name: string) => {
      const first = await post(ACME_KEY, 'reach_agent', `${name}: reach`);
      expect(first.status, await first.clone().text()).toBe(201);
      const runId = ((await first.json()) as { run_id: string }).run_id;
      // acme may have one run in flight: the next one is refused while the first has not ended.
      const refused = await waitFor(
        async () => {
          const next = await post(ACME_KEY, 'reach_agent', `${name}: over quota`);
          if (next.status === 429) return true;
          const accepted = (await next.json()) as { run_id?: string };
          if (accepted.run_id) await ended(ACME_KEY, accepted.run_id);
          return undefined;
        },
        30_000,
        `${name}: a run of acme refused at its quota`,
      );
      expect(refused).toBe(true);
      const others = await Promise.all(
        ['stranded_agent', 'locked_agent', 'delegating_agent'].map(async (agent) => {
          const res = await post(OPS_KEY, agent, `${name}: ${agent}`);
          expect(res.status).toBe(201);
          return ((await res.json()) as { run_id: string }).run_id;
        }),
      );
      const reach = await ended(ACME_KEY, runId);
      const failed = await Promise.all(others.map((id) => ended(OPS_KEY, id)));
      return [reach.status, ...failed.map((r) => r.status)];
    };

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'agent-reach-prom-reach-'));
      h = await startRunsHarness({}, { executor: false, scheduler: false });
      [billing, refusing, db] = await Promise.all([
        startBillingServer(),
        startRefusingProvider(),
        testDatabase(),
      ]);
      copyFileSync(
        path.join(ROOT, 'test/fixtures/billing.openapi.yaml'),
        path.join(dir, 'billing.openapi.yaml'),
      );
      writeFileSync(path.join(dir, 'readme.txt'), 'read me');
      const agentsFile = path.join(dir, 'agents.yaml');
      writeFileSync(
        agentsFile,
        JSON.stringify({
          agents: [
            {
              name: 'reach_agent',
              tools: ['fs__list_directory', 'fs__read_text_file', 'billing__getInvoice'],
              model: 'down/m',
              fallback: ['primary/obs-reach'],
            },
            { name: 'stranded_agent', tools: [], model: 'down/m' },
            { name: 'locked_agent', tools: [], model: 'locked/m' },
            {
              name: 'delegating_agent',
              tools: [],
              model: 'primary/obs-delegate',
              agent_tools: ['stranded_agent'],
            },
          ],
          tool_groups: {
            default: {
              mcp_servers: [
                { name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, dir] },
                // A command that does not exist: the server stays down.
                { name: 'gone', command: 'agent-reach-no-such-command' },
              ],
              openapi: [
                {
                  name: 'billing',
                  document: './billing.openapi.yaml',
                  base_url: billing.url,
                  auth: { type: 'bearer', env: 'BILLING_TOKEN' },
                  operations: ['getInvoice'],
                },
              ],
            },
          },
        }),
      );
      const providersFile = path.join(dir, 'providers.yaml');
      writeFileSync(
        providersFile,
        JSON.stringify({
          providers: [
            { name: 'primary', base_url: h.sim.url, models: ['obs-reach', 'obs-delegate'] },
            // Refuses connections (the discard port): one failure opens its breaker for the whole test.
            {
              name: 'down',
              base_url: 'http://127.0.0.1:9/v1',
              models: ['m'],
              max_retries: 0,
              breaker: { failures: 1, reset_ms: 600_000 },
            },
            { name: 'locked', base_url: refusing.url, models: ['m'], max_retries: 0 },
          ],
          // A price high enough that one run passes AgentReachTenantCostHigh's 100 an hour.
          prices: { 'primary/obs-reach': { input: 1_000_000, output: 1_000_000 } },
        }),
      );
      h.sim.addScenario({
        name: 'obs-reach',
        turns: [
          {
            tool_calls: [
              { name: 'fs__list_directory', arguments: { path: dir } },
              { name: 'fs__read_text_file', arguments: { path: path.join(dir, 'missing.txt') } },
              { name: 'billing__getInvoice', arguments: { invoiceId: 'INV-2' } },
              { name: 'billing__getInvoice', arguments: { invoiceId: 'INV-404' } },
            ],
          },
          { content: 'reached' },
        ],
      });
      h.sim.addScenario({
        name: 'obs-delegate',
        turns: [
          { tool_calls: [{ name: 'ask_stranded_agent', arguments: { input: 'try' } }] },
          { content: 'delegated: {{ last.error.type }}' },
        ],
      });

      const env = testEnv(h.prefix, h.sim, {
        AGENTS_FILE: agentsFile,
        PROVIDERS_FILE: providersFile,
        DATABASE_URL: db.url,
        BILLING_TOKEN: 'billing-secret',
        API_KEYS: `ops:${OPS_KEY},acme-desk:${ACME_KEY}:*:acme`,
        API_PORT: '0',
        API_HOST: '127.0.0.1',
        TENANT_QUOTAS: 'acme:runs=1:tokens=100000000',
        ARCHIVER_METRICS_PORT: '0',
        QUEUE_SAMPLE_INTERVAL_MS: '1000',
      });
      const executor = startExecutorWith(env);
      children.push(executor);
      ports[EXECUTOR_JOB]!.push(Number((await executor.ready).metricsPort));
      const scheduler = startSchedulerChild(env);
      children.push(scheduler);
      const ready = await scheduler.ready;
      ports[SCHEDULER_JOB]!.push(Number(ready.metricsPort));
      apiUrl = String(ready.apiUrl);
      const archiver = startArchiverChild(env);
      children.push(archiver);
      ports[ARCHIVER_JOB]!.push(Number((await archiver.ready).metricsPort));

      const deploy = parseYaml(readFileSync(DEPLOY_PROMETHEUS, 'utf8')) as {
        scrape_configs: Array<{ job_name: string }>;
      };
      const scrapeConfigs = deploy.scrape_configs
        .filter((c) => ports[c.job_name] !== undefined)
        .map((c) => ({
          job_name: c.job_name,
          static_configs: [{ targets: (ports[c.job_name] ?? []).map((p) => `127.0.0.1:${p}`) }],
        }));
      expect(scrapeConfigs.map((c) => c.job_name).sort()).toEqual([
        ARCHIVER_JOB,
        EXECUTOR_JOB,
        SCHEDULER_JOB,
      ]);
      const configFile = path.join(dir, 'prometheus.yml');
      writeFileSync(
        configFile,
        JSON.stringify({
          global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
          rule_files: [DEPLOY_ALERTS],
          scrape_configs: scrapeConfigs,
        }),
      );
      prometheus = await startPrometheus(configFile, path.join(dir, 'data'));
      await waitFor(
        async () => {
          const targets = await prometheus!.api<{ data: { activeTargets: Array<{ health: string }> } }>(
            '/api/v1/targets',
          );
          const active = targets.data.activeTargets;
          return active.length === 3 && active.every((t) => t.health === 'up');
        },
        20_000,
        'every target to be up',
      );
      // Two phases, the first scraped before the second, so that every rate and quantile has a value.
      expect(await phase('first')).toEqual(['succeeded', 'failed', 'failed', 'succeeded']);
      await scrapedAsServed('first phase');
      expect(await phase('second')).toEqual(['succeeded', 'failed', 'failed', 'succeeded']);
      await scrapedAsServed('second phase');
      await waitFor(
        async () => ((await scalar('sum(agent_reach_archive_runs_total)')) ?? 0) >= 1,
        20_000,
        'Prometheus to scrape the archived runs',
      );
    }, 120_000);

    afterAll(async () => {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited));
      children = [];
      await prometheus?.stop();
      await billing?.close();
      await refusing?.close();
      await h?.close();
      await db?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 30_000);

    it('returns data for every query of every panel of the reach dashboard', async () => {
      const queries = panelQueries([REACH_DASHBOARD]);
      expect(queries.length).toBeGreaterThan(20);
      const failures: string[] = [];
      for (const { panel, expr } of queries) {
        const r = await prometheus!.query(toPromQl(expr));
        if (r.status !== 'success' || !finite(r)) failures.push(`${panel}: ${expr}\n  → ${describeQuery(r)}`);
      }
      expect(failures).toEqual([]);
    });

    it('charts OpenAPI answers by HTTP status, MCP calls by server only, and cost by tenant', async () => {
      const statuses = await prometheus!.query('sum by (tool, status) (agent_reach_openapi_responses_total)');
      expect(
        (statuses.data?.result ?? []).map((s) => `${s.metric.tool} ${s.metric.status} ${s.value[1]}`).sort(),
      ).toEqual(['billing__getInvoice 200 2', 'billing__getInvoice 404 2']);
      const servers = panelQueries([REACH_DASHBOARD]).find((q) =>
        q.panel.includes('MCP tool calls per second'),
      )!;
      const byServer = await prometheus!.query(toPromQl(servers.expr));
      // billing__getInvoice shares the separator but is no MCP server's tool.
      expect(new Set((byServer.data?.result ?? []).map((s) => s.metric.server))).toEqual(new Set(['fs']));
      const cost = await prometheus!.query('sum by (tenant) (agent_reach_llm_cost_total)');
      expect((cost.data?.result ?? []).map((s) => s.metric.tenant)).toEqual(['acme']);
    });

    /** Waits until an alert's expression returns data and the rule engine raises it (pending or firing). */
    const raised = async (name: string) => {
      const rule = alertRules().find((r) => r.alert === name);
      expect(rule, name).toBeDefined();
      const data = await waitFor(
        async () => {
          const r = await prometheus!.query(rule!.expr);
          return (r.data?.result.length ?? 0) > 0 ? r.data!.result : undefined;
        },
        15_000,
        `${name}: its expression to return data`,
      );
      type Alerts = { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } };
      const alert = await waitFor(
        async () =>
          (await prometheus!.api<Alerts>('/api/v1/alerts')).data.alerts.find(
            (a) => a.labels.alertname === name,
          ),
        15_000,
        `${name}: the rule engine to raise it`,
      );
      return { data, alert };
    };

    it('raises AgentReachLlmProviderBreakerOpen for the provider that refuses connections, and only for it', async () => {
      const { data, alert } = await raised('AgentReachLlmProviderBreakerOpen');
      expect(data.map((s) => s.metric.provider)).toEqual(['down']);
      expect(['pending', 'firing']).toContain(alert.state);
    });

    it('raises AgentReachAgentModelsUnavailable for the agents whose every model failed, not for the one with a fallback', async () => {
      const { data } = await raised('AgentReachAgentModelsUnavailable');
      expect(data.map((s) => s.metric.agent).sort()).toEqual(['locked_agent', 'stranded_agent']);
    });

    it('raises AgentReachLlmProviderKeyRefused for the provider answering 401', async () => {
      const { data, alert } = await raised('AgentReachLlmProviderKeyRefused');
      expect(data.map((s) => s.metric.provider)).toEqual(['locked']);
      expect(alert.labels.severity).toBe('critical');
    });

    it('raises AgentReachMcpServerDown for the MCP server whose command does not exist, not for the one up', async () => {
      const { data } = await raised('AgentReachMcpServerDown');
      expect(data.map((s) => s.metric.server)).toEqual(['gone']);
    });

    it('raises AgentReachTenantCostHigh for the tenant whose runs passed the configured cost an hour', async () => {
      const { data } = await raised('AgentReachTenantCostHigh');
      expect(data.map((s) => s.metric.tenant)).toEqual(['acme']);
      expect(Number(data[0]!.value[1])).toBeGreaterThan(100);
    });
  },
);
