import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@agent-reach/shared';
import { ROOT } from './helpers/processes.js';
import { allPanels, parseYaml, vectorSelectors, type DashboardPanel } from './helpers/prometheus.js';

/** The parts of a compose service this test reads. */
interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  container_name?: string;
  environment?: Record<string, string>;
  ports?: string[];
  expose?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: string[] };
}

interface ScrapeConfig {
  job_name: string;
  static_configs?: Array<{ targets: string[] }>;
  dns_sd_configs?: Array<{ names: string[]; type?: string; port?: number }>;
}

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const compose = parseYaml(read('docker-compose.yml')) as { services: Record<string, Service> };
const services = compose.services;
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service "${name}"`);
  return s;
};
const prometheusYml = parseYaml(read('deploy/prometheus/prometheus.yml')) as {
  rule_files?: string[];
  scrape_configs: ScrapeConfig[];
};
const alertsYml = parseYaml(read('deploy/prometheus/alerts.yml')) as {
  groups: Array<{
    name: string;
    rules: Array<{
      alert?: string;
      expr: string;
      for?: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }>;
  }>;
};
const alertRules = alertsYml.groups.flatMap((g) => g.rules);
const dashboardFiles = ['deploy/grafana/dashboards/agent-reach.json'];

/** Container-side ports a service publishes or exposes on the compose network. */
function containerPorts(s: Service): number[] {
  const published = (s.ports ?? []).map((p) => Number(String(p).split(':').at(-1)?.split('/')[0]));
  return [...published, ...(s.expose ?? []).map(Number)];
}

/** Bind mounts of a service: host path (resolved against the repository) and container path. */
function bindMounts(s: Service): Array<{ host: string; target: string }> {
  return (s.volumes ?? [])
    .map((v) => v.split(':'))
    .filter(([source]) => source !== undefined && (source.startsWith('.') || source.startsWith('/')))
    .map(([source, target]) => ({ host: path.resolve(ROOT, source ?? ''), target: target ?? '' }));
}

/** The repository file a container path of a service comes from, through its bind mounts. */
function hostPathOf(s: Service, containerPath: string): string | undefined {
  const mount = bindMounts(s).find(
    (m) => containerPath === m.target || containerPath.startsWith(`${m.target.replace(/\/$/, '')}/`),
  );
  return mount ? path.join(mount.host, path.relative(mount.target, containerPath)) : undefined;
}

function commandOf(s: Service): string[] {
  return typeof s.command === 'string' ? s.command.split(/\s+/) : (s.command ?? []);
}

/** Metric names the code defines: the platform's own (createMetrics, createSchedulerMetrics, the sampler). */
function definedMetrics(): Set<string> {
  const names = new Set<string>();
  for (const file of ['packages/shared/src/metrics.ts', 'packages/scheduler/src/queue-sampler.ts']) {
    for (const m of read(file).matchAll(/`\$\{METRIC_PREFIX\}([a-z0-9_]+)`/g))
      names.add(`agent_reach_${m[1]}`);
  }
  return names;
}

/** Whether a series name comes from a defined metric (histogram series included) or prom-client's defaults. */
function isKnownSeries(name: string, defined: Set<string>): boolean {
  if (/^agent_reach_(executor|scheduler)_(process|nodejs)_[a-z0-9_]+$/.test(name)) return true;
  if (name === 'up') return true;
  return defined.has(name) || defined.has(name.replace(/_(bucket|sum|count)$/, ''));
}

/** Metric names an expression selects, by name or by a `__name__` regex (checked per alternative). */
function metricNames(expr: string): string[] {
  return vectorSelectors(expr).flatMap((selector) => {
    const bare = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(selector)?.[1];
    if (bare) return [bare];
    const regex = /__name__=~"([^"]+)"/.exec(selector)?.[1];
    if (!regex) return [];
    // agent_reach_(scheduler|executor)_x → each alternative spelled out.
    const alt = /^(.*)\(([^()]+)\)(.*)$/.exec(regex);
    return alt ? (alt[2] ?? '').split('|').map((a) => `${alt[1]}${a}${alt[3]}`) : [regex];
  });
}

describe('deployment files: docker-compose.yml, Dockerfile, Prometheus and Grafana provisioning', () => {
  it('declares redis, llm-sim, scheduler, executor, prometheus and grafana', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['executor', 'grafana', 'llm-sim', 'prometheus', 'redis', 'scheduler'].sort(),
    );
  });

  it('runs redis with a health check, AOF fsync every second and no eviction', () => {
    const redis = service('redis');
    const command = commandOf(redis);
    const flag = (name: string) => command[command.indexOf(name) + 1];
    expect(command).toContain('--appendonly');
    expect(flag('--appendonly')).toBe('yes');
    expect(flag('--appendfsync')).toBe('everysec');
    expect(flag('--maxmemory-policy')).toBe('noeviction');
    expect(redis.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('starts the platform processes only once redis is healthy, and the scheduler once llm-sim is', () => {
    const dependsOn = (name: string) => service(name).depends_on as Record<string, { condition?: string }>;
    for (const name of ['scheduler', 'executor']) {
      expect(dependsOn(name).redis, name).toEqual({ condition: 'service_healthy' });
    }
    expect(dependsOn('scheduler')['llm-sim']).toEqual({ condition: 'service_healthy' });
    expect(service('grafana').depends_on).toContain('prometheus');
    for (const [name, s] of Object.entries(services)) {
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const dep of deps) expect(Object.keys(services), `${name} depends on ${dep}`).toContain(dep);
      for (const [dep, spec] of Object.entries(Array.isArray(s.depends_on) ? {} : (s.depends_on ?? {}))) {
        if (spec.condition === 'service_healthy') expect(service(dep).healthcheck, dep).toBeDefined();
      }
    }
  });

  it('publishes the API, llm-sim, Prometheus and Grafana, and exposes the metrics ports on the network', () => {
    expect(service('scheduler').ports).toContain('8080:8080');
    expect(containerPorts(service('scheduler'))).toEqual(expect.arrayContaining([8080, 9465]));
    expect(containerPorts(service('executor'))).toEqual([9464]);
    expect(containerPorts(service('llm-sim'))).toEqual([4010]);
    expect(service('prometheus').ports).toContain('9090:9090');
    expect(service('grafana').ports).toContain('3000:3000');
  });

  it('lets the executor scale: no container_name and no host port on it', () => {
    const executor = service('executor');
    expect(executor.container_name).toBeUndefined();
    expect(executor.ports).toBeUndefined();
  });

  it('configures the processes with values loadConfig accepts, pointing at the compose services', () => {
    const scheduler = service('scheduler').environment ?? {};
    expect(scheduler).toMatchObject({
      REDIS_URL: 'redis://redis:6379',
      OPENAI_BASE_URL: 'http://llm-sim:4010/v1',
      OPENAI_API_KEY: 'sim',
      OPENAI_MODEL: 'weather-trip',
      API_PORT: '8080',
    });
    expect(loadConfig(scheduler).scheduler.metricsPort).toBe(9465);
    const executor = service('executor').environment ?? {};
    expect(loadConfig(executor).executor.metricsPort).toBe(9464);
    expect(loadConfig(executor).redisUrl).toBe('redis://redis:6379');
    expect(new URL(scheduler.OPENAI_BASE_URL ?? '').port).toBe('4010');
  });

  it('runs each process through a CLI entry point that exists, llm-sim listening on every interface', () => {
    const expected: Record<string, string> = {
      scheduler: 'scheduler',
      executor: 'executor',
      'llm-sim': 'llm-sim',
    };
    for (const [name, subcommand] of Object.entries(expected)) {
      const command = commandOf(service(name));
      expect(command.slice(0, 3), name).toEqual(['node', 'packages/cli/bin/agent-reach.js', subcommand]);
      expect(existsSync(path.join(ROOT, command[1] ?? ''))).toBe(true);
      expect(service(name).build, name).toBe('.');
    }
    expect(read('packages/cli/src/main.ts')).toMatch(/case 'llm-sim':/);
    const sim = commandOf(service('llm-sim'));
    expect(sim.slice(3)).toEqual(['--port', '4010', '--host', '0.0.0.0']);
  });

  it('mounts only files and directories that exist in the repository', () => {
    const mounts = Object.entries(services).flatMap(([name, s]) =>
      bindMounts(s).map((m) => ({ name, ...m })),
    );
    expect(mounts.length).toBeGreaterThanOrEqual(3);
    for (const m of mounts) expect(existsSync(m.host), `${m.name}: ${m.host}`).toBe(true);
    const prometheus = service('prometheus');
    const configArg = commandOf(prometheus).find((a) => a.startsWith('--config.file='));
    const configFile = hostPathOf(prometheus, configArg?.split('=')[1] ?? '');
    expect(configFile).toBe(path.join(ROOT, 'deploy/prometheus/prometheus.yml'));
    for (const rules of prometheusYml.rule_files ?? []) {
      expect(existsSync(path.resolve(path.dirname(configFile ?? ''), rules)), rules).toBe(true);
    }
  });

  it('scrapes only compose services, on ports those services expose', () => {
    const targets = prometheusYml.scrape_configs.flatMap((c) => [
      ...(c.static_configs ?? []).flatMap((s) =>
        s.targets.map((t) => ({
          job: c.job_name,
          host: t.split(':')[0] ?? '',
          port: Number(t.split(':')[1]),
        })),
      ),
      ...(c.dns_sd_configs ?? []).flatMap((d) =>
        d.names.map((n) => ({ job: c.job_name, host: n, port: d.port ?? 0, type: d.type })),
      ),
    ]);
    expect(targets.map((t) => t.job)).toEqual(
      expect.arrayContaining(['agent-reach-scheduler', 'agent-reach-executor']),
    );
    for (const t of targets) {
      expect(Object.keys(services), `${t.job} scrapes ${t.host}`).toContain(t.host);
      expect(containerPorts(service(t.host)), `${t.job} scrapes ${t.host}:${t.port}`).toContain(t.port);
    }
    // Every executor replica is a target: found by DNS (one A record per container), not a fixed list.
    const executor = prometheusYml.scrape_configs.find((c) => c.job_name === 'agent-reach-executor');
    expect(executor?.dns_sd_configs?.[0]).toMatchObject({ names: ['executor'], type: 'A', port: 9464 });
    expect(targets.some((t) => t.host === 'llm-sim')).toBe(false);
  });

  it('builds a multi-stage image with pnpm 10 and a frozen lockfile that runs as an unprivileged user', () => {
    const dockerfile = read('Dockerfile');
    const lines = dockerfile.split('\n').map((l) => l.trim());
    const stages = lines.filter((l) => /^FROM\s/i.test(l));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages.every((s) => /^FROM node:20-slim\b/.test(s))).toBe(true);
    const names = stages.map((s) => /\sAS\s+(\S+)/i.exec(s)?.[1]);
    for (const from of dockerfile.matchAll(/COPY\s+--from=(\S+)/g)) expect(names).toContain(from[1]);
    expect(dockerfile).toMatch(/npm install -g pnpm@10\b/);
    expect(dockerfile).toMatch(/pnpm install --frozen-lockfile\b/);
    const finalStage = lines.slice(lines.lastIndexOf(stages.at(-1) ?? ''));
    const user = finalStage.filter((l) => /^USER\s/i.test(l)).at(-1);
    expect(user, 'the final stage sets USER').toBeDefined();
    expect(user?.split(/\s+/)[1]).not.toMatch(/^(root|0)(:|$)/);
    // Every file the build copies from the context exists and is not excluded by .dockerignore.
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const copy of dockerfile.matchAll(/^COPY\s+(?!--from)(.+)$/gm)) {
      const sources = (copy[1] ?? '')
        .split(/\s+/)
        .filter((a) => !a.startsWith('--'))
        .slice(0, -1);
      for (const source of sources) {
        expect(existsSync(path.join(ROOT, source)), source).toBe(true);
        expect(ignored, `${source} is excluded by .dockerignore`).not.toContain(source.replace(/\/$/, ''));
      }
    }
    expect(ignored).toContain('**/node_modules');
  });

  it('provisions the Prometheus datasource under the uid the dashboards use, and the dashboards folder', () => {
    const grafana = service('grafana');
    const datasources = parseYaml(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: Array<{ uid: string; type: string; url: string }>;
    };
    const [ds] = datasources.datasources;
    expect(ds).toMatchObject({ uid: 'prometheus', type: 'prometheus' });
    const url = new URL(ds?.url ?? '');
    expect(containerPorts(service(url.hostname))).toContain(Number(url.port));
    const providers = parseYaml(read('deploy/grafana/provisioning/dashboards/agent-reach.yml')) as {
      providers: Array<{ type: string; options: { path: string } }>;
    };
    for (const p of providers.providers) {
      const dir = hostPathOf(grafana, p.options.path);
      expect(dir, p.options.path).toBeDefined();
      expect(statSync(dir ?? '').isDirectory()).toBe(true);
      for (const file of dashboardFiles)
        expect(existsSync(path.join(dir ?? '', path.basename(file)))).toBe(true);
    }
    expect(hostPathOf(grafana, '/etc/grafana/provisioning/datasources')).toBe(
      path.join(ROOT, 'deploy/grafana/provisioning/datasources'),
    );
  });

  it('gives every dashboard panel a datasource, at least one query and a unit', () => {
    for (const file of dashboardFiles) {
      const dashboard = JSON.parse(read(file)) as { uid?: string; panels?: DashboardPanel[] };
      expect(dashboard.uid).toBeTruthy();
      const panels = allPanels(dashboard);
      expect(panels.length).toBeGreaterThanOrEqual(12);
      expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
      for (const p of panels) {
        const where = `${file}: panel ${p.id} "${p.title}"`;
        expect(p.datasource, where).toEqual({ type: 'prometheus', uid: 'prometheus' });
        expect(p.targets?.length, where).toBeGreaterThan(0);
        for (const t of p.targets ?? []) expect(t.expr?.trim(), where).toBeTruthy();
        expect(p.fieldConfig?.defaults?.unit, where).toBeTruthy();
      }
    }
  });

  it('charts every required signal: calls, errors, latency, retries, breakers, queues, runs, steps, LLM, guards, throughput', () => {
    const exprs = dashboardFiles.flatMap((f) =>
      allPanels(JSON.parse(read(f)) as { panels?: DashboardPanel[] }).flatMap((p) =>
        (p.targets ?? []).map((t) => t.expr ?? ''),
      ),
    );
    const charted = (pattern: RegExp) => exprs.some((e) => pattern.test(e));
    const required: Record<string, RegExp> = {
      'tool call rate by tool': /sum by \(tool\) \(rate\(agent_reach_tool_calls_total\[/,
      'tool error rate': /agent_reach_tool_calls_total\{status="error"\}/,
      'tool latency p50': /histogram_quantile\(0\.5, .*agent_reach_tool_call_duration_seconds_bucket/,
      'tool latency p95': /histogram_quantile\(0\.95, .*agent_reach_tool_call_duration_seconds_bucket/,
      'tool latency p99': /histogram_quantile\(0\.99, .*agent_reach_tool_call_duration_seconds_bucket/,
      retries: /agent_reach_tool_retries_total/,
      'breaker states': /agent_reach_breaker_state\b/,
      'queue depth': /agent_reach_queue_jobs/,
      'queue wait time': /agent_reach_tool_queue_wait_seconds_bucket/,
      'runs by outcome': /sum by \(outcome\) \(rate\(agent_reach_runs_total/,
      'run duration': /agent_reach_run_duration_seconds_bucket/,
      'steps per run': /agent_reach_run_steps_bucket/,
      'LLM latency': /agent_reach_llm_request_duration_seconds_bucket/,
      'LLM tokens': /agent_reach_llm_tokens_total/,
      'guard firings': /agent_reach_guard_firings_total/,
      'executor throughput per instance': /sum by \(instance\) \(rate\(agent_reach_tool_calls_total/,
    };
    const missing = Object.entries(required)
      .filter(([, pattern]) => !charted(pattern))
      .map(([name]) => name);
    expect(missing).toEqual([]);
  });

  it('uses only metrics the processes define, in dashboards and alert rules', () => {
    const defined = definedMetrics();
    expect(defined.has('agent_reach_tool_calls_total')).toBe(true);
    expect(defined.has('agent_reach_queue_jobs')).toBe(true);
    const exprs = [
      ...alertRules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
      ...dashboardFiles.flatMap((f) =>
        allPanels(JSON.parse(read(f)) as { panels?: DashboardPanel[] }).flatMap((p) =>
          (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr ?? '' })),
        ),
      ),
    ];
    const unknown = exprs.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !isKnownSeries(name, defined))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('gives every alert a severity, a summary and a description, and covers the required conditions', () => {
    expect(alertRules.length).toBeGreaterThanOrEqual(4);
    for (const r of alertRules) {
      expect(r.alert, r.expr).toMatch(/^AgentReach[A-Za-z]+$/);
      expect(['warning', 'critical'], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
    }
    const exprOf = (name: string) => alertRules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('AgentReachBreakerOpen')).toMatch(/agent_reach_breaker_state/);
    expect(exprOf('AgentReachToolQueueWaitHigh')).toMatch(/agent_reach_tool_queue_wait_seconds_bucket/);
    expect(exprOf('AgentReachRunsNotConverging')).toMatch(/outcome=~"not_converged\|failed"/);
    expect(exprOf('AgentReachToolQueueNotConsumed')).toMatch(/agent_reach_queue_jobs/);
    expect(exprOf('AgentReachNoExecutorUp')).toMatch(/up\{job="agent-reach-executor"\}/);
    const jobs = prometheusYml.scrape_configs.map((c) => c.job_name);
    for (const r of alertRules) {
      for (const job of r.expr.matchAll(/job="([^"]+)"/g)) expect(jobs, r.alert).toContain(job[1]);
    }
  });
});
