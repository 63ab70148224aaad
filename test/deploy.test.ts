import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@agent-reach/shared';
import { ROOT, startExecutorChild, type Child } from './helpers/processes.js';
import { allPanels, parseYaml, vectorSelectors, type DashboardPanel } from './helpers/prometheus.js';
import { testRedis } from './helpers/redis.js';

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

/**
 * Compose's variable interpolation: `${VAR}`, `${VAR:-default}`, `${VAR:?message}` (an error when VAR is
 * unset or empty, as `docker compose` reports it) and `$$`, applied to every string of a value.
 */
function interpolate<T>(value: T, env: Record<string, string>): T {
  if (typeof value === 'string') {
    return value.replace(/\$\$|\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}/g, (match, name, op, arg) => {
      if (match === '$$') return '$';
      const v = env[name as string];
      if (op === ':?' && !v) throw new Error(`required variable ${name} is missing a value: ${arg}`);
      return v || (op === ':-' ? (arg as string) : '');
    }) as T;
  }
  if (Array.isArray(value)) return value.map((v: unknown) => interpolate(v, env)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)])) as T;
  }
  return value;
}

/** Variables of an env file that are set (comments and blank lines skipped), with their values. */
function envFile(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** What an operator puts into .env, following .env.example. */
const DOT_ENV = {
  REDIS_PASSWORD: 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',
  POSTGRES_PASSWORD: '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0',
  API_KEYS: 'ops:0123456789abcdef0123456789abcdef0123456789abcdef',
  GRAFANA_ADMIN_USER: 'admin',
  GRAFANA_ADMIN_PASSWORD: 'Zm9vYmFyYmF6cXV4cXV1eA',
};
const rawCompose = parseYaml(read('docker-compose.yml')) as { services: Record<string, Service> };
const compose = interpolate(rawCompose, DOT_ENV);
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
// Every dashboard the deploy provisions, not only the first: a panel of any of them must query metrics
// the processes define.
const dashboardFiles = readdirSync(path.join(ROOT, 'deploy/grafana/dashboards'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => `deploy/grafana/dashboards/${f}`);

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
  for (const file of [
    'packages/shared/src/observability/metrics.ts',
    'packages/shared/src/observability/workflow-metrics.ts',
    'packages/scheduler/src/fleet/queue-sampler.ts',
    'packages/scheduler/src/model/provider-metrics.ts',
    'packages/archive/src/archiver.ts',
    'packages/scheduler/src/api/tenant-admission.ts',
  ]) {
    for (const m of read(file).matchAll(/`\$\{METRIC_PREFIX\}([a-z0-9_]+)`/g))
      names.add(`agent_reach_${m[1]}`);
  }
  // Gauges made by a helper that is handed the name's suffix (`limit('tenant_…_limit', …)`).
  for (const m of read('packages/scheduler/src/api/tenant-admission.ts').matchAll(
    /limit\(\s*'([a-z0-9_]+)'/g,
  ))
    names.add(`agent_reach_${m[1]}`);
  return names;
}

/** Whether a series name comes from a defined metric (histogram series included) or prom-client's defaults. */
function isKnownSeries(name: string, defined: Set<string>): boolean {
  if (/^agent_reach_(executor|scheduler|archiver)_(process|nodejs)_[a-z0-9_]+$/.test(name)) return true;
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
  it('declares redis, postgres, llm-sim, scheduler, executor, archiver, prometheus and grafana', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['archiver', 'executor', 'grafana', 'llm-sim', 'postgres', 'prometheus', 'redis', 'scheduler'].sort(),
    );
  });

  it('runs postgres 15 on a volume with a health check, and points the scheduler and the archiver at it', () => {
    const postgres = service('postgres');
    expect(postgres.image).toBe('postgres:15');
    expect(postgres.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(postgres.healthcheck?.test).toEqual([
      'CMD',
      'pg_isready',
      '-U',
      'agent_reach',
      '-d',
      'agent_reach',
    ]);
    expect(postgres.environment?.POSTGRES_PASSWORD).toBe(DOT_ENV.POSTGRES_PASSWORD);
    expect(postgres.ports).toBeUndefined();
    expect(containerPorts(postgres)).toEqual([5432]);
    for (const name of ['scheduler', 'archiver']) {
      const env = service(name).environment ?? {};
      const url = new URL(env.DATABASE_URL ?? '');
      expect(
        { host: url.hostname, port: url.port, user: url.username, password: url.password, db: url.pathname },
        name,
      ).toEqual({
        host: 'postgres',
        port: '5432',
        user: postgres.environment?.POSTGRES_USER,
        password: DOT_ENV.POSTGRES_PASSWORD,
        db: `/${postgres.environment?.POSTGRES_DB}`,
      });
      expect(loadConfig(env).archive.databaseUrl, name).toBe(env.DATABASE_URL);
      expect((service(name).depends_on as Record<string, { condition?: string }>).postgres, name).toEqual({
        condition: 'service_healthy',
      });
    }
    expect(loadConfig(service('archiver').environment ?? {}).archive.metricsPort).toBe(9466);
    expect(containerPorts(service('archiver'))).toEqual([9466]);
    expect(service('archiver').ports).toBeUndefined();
  });

  it('runs redis with a health check, AOF fsync every second and no eviction', () => {
    const redis = service('redis');
    const command = commandOf(redis);
    const flag = (name: string) => command[command.indexOf(name) + 1];
    expect(command).toContain('--appendonly');
    expect(flag('--appendonly')).toBe('yes');
    expect(flag('--appendfsync')).toBe('everysec');
    expect(flag('--maxmemory-policy')).toBe('noeviction');
    // redis-cli exits 0 on NOAUTH too: the check must look for the answer.
    expect(redis.healthcheck?.test).toEqual(['CMD-SHELL', 'redis-cli ping | grep -q PONG']);
    expect(redis.environment?.REDISCLI_AUTH).toBe(DOT_ENV.REDIS_PASSWORD);
  });

  it('starts the platform processes only once redis is healthy, and the scheduler once llm-sim is', () => {
    const dependsOn = (name: string) => service(name).depends_on as Record<string, { condition?: string }>;
    for (const name of ['scheduler', 'executor', 'archiver']) {
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

  it('publishes only the API and, on loopback, Grafana; every other port stays on the compose network', () => {
    expect(service('scheduler').ports).toEqual(['8080:8080']);
    expect(containerPorts(service('scheduler'))).toEqual(expect.arrayContaining([8080, 9465]));
    expect(service('grafana').ports).toEqual(['127.0.0.1:3000:3000']);
    for (const name of ['redis', 'llm-sim', 'prometheus', 'executor']) {
      expect(service(name).ports, `${name} publishes no port`).toBeUndefined();
    }
    expect(containerPorts(service('redis'))).toEqual([6379]);
    expect(containerPorts(service('executor'))).toEqual([9464]);
    expect(containerPorts(service('llm-sim'))).toEqual([4010]);
    expect(containerPorts(service('prometheus'))).toEqual([9090]);
  });

  it('takes every secret from .env, ships none, and refuses to start while one is missing', () => {
    const example = envFile(read('.env.example'));
    const required = [...read('docker-compose.yml').matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => m[1]);
    expect([...new Set(required)].sort()).toEqual([
      'API_KEYS',
      'GRAFANA_ADMIN_PASSWORD',
      'POSTGRES_PASSWORD',
      'REDIS_PASSWORD',
    ]);
    for (const name of new Set(required)) {
      // Listed in the example with no value, so an unedited copy does not start.
      expect(example[name ?? ''], `${name} in .env.example`).toBe('');
      const missing: Record<string, string> = { ...DOT_ENV };
      delete missing[name ?? ''];
      expect(() => interpolate(rawCompose, missing), name).toThrow(new RegExp(`required variable ${name}`));
    }
    expect(rawCompose.services.scheduler?.environment?.API_KEYS).toMatch(/^\$\{API_KEYS:\?/);
    expect(service('scheduler').environment?.API_KEYS).toBe(DOT_ENV.API_KEYS);
    // No key, password or token is written in the compose file itself.
    expect(read('docker-compose.yml')).not.toMatch(/change-me|dev-key|API_KEYS: [a-z]+:[^$]/i);
    const ignoredBy = (file: string) =>
      read(file)
        .split('\n')
        .map((l) => l.trim());
    expect(ignoredBy('.gitignore')).toContain('.env');
    expect(ignoredBy('.dockerignore')).toContain('.env');
  });

  it('protects Redis with the password from .env, and points every process at it with that password', () => {
    const command = commandOf(service('redis'));
    expect(command[command.indexOf('--requirepass') + 1]).toBe(DOT_ENV.REDIS_PASSWORD);
    for (const name of ['scheduler', 'executor', 'archiver']) {
      const url = new URL(service(name).environment?.REDIS_URL ?? '');
      expect({ host: url.hostname, port: url.port, password: url.password }, name).toEqual({
        host: 'redis',
        port: '6379',
        password: DOT_ENV.REDIS_PASSWORD,
      });
    }
  });

  it('runs Prometheus without its lifecycle or admin API, and Grafana with a password and no anonymous access', () => {
    const prometheus = commandOf(service('prometheus'));
    expect(prometheus).not.toContain('--web.enable-lifecycle');
    expect(prometheus).not.toContain('--web.enable-admin-api');
    const grafana = service('grafana').environment ?? {};
    expect(grafana).toMatchObject({
      GF_AUTH_ANONYMOUS_ENABLED: 'false',
      GF_USERS_ALLOW_SIGN_UP: 'false',
      GF_SECURITY_ADMIN_PASSWORD: DOT_ENV.GRAFANA_ADMIN_PASSWORD,
    });
    expect(Object.keys(grafana).filter((k) => k.startsWith('GF_AUTH_ANONYMOUS_ORG'))).toEqual([]);
  });

  it('has the metrics servers listen on the compose network in containers and on loopback elsewhere', () => {
    expect(loadConfig({}).metricsHost).toBe('127.0.0.1');
    for (const name of ['scheduler', 'executor']) {
      expect(loadConfig(service(name).environment ?? {}).metricsHost, name).toBe('0.0.0.0');
    }
  });

  it('lets the executor scale: no container_name and no host port on it', () => {
    const executor = service('executor');
    expect(executor.container_name).toBeUndefined();
    expect(executor.ports).toBeUndefined();
  });

  it('configures the processes with values loadConfig accepts, pointing at the compose services', () => {
    const scheduler = service('scheduler').environment ?? {};
    expect(scheduler).toMatchObject({
      REDIS_URL: `redis://:${DOT_ENV.REDIS_PASSWORD}@redis:6379`,
      OPENAI_BASE_URL: 'http://llm-sim:4010/v1',
      OPENAI_API_KEY: 'sim',
      OPENAI_MODEL: 'weather-trip',
      API_PORT: '8080',
    });
    expect(loadConfig(scheduler).scheduler.metricsPort).toBe(9465);
    const executor = service('executor').environment ?? {};
    expect(loadConfig(executor).executor.metricsPort).toBe(9464);
    expect(loadConfig(executor).redisUrl).toBe(`redis://:${DOT_ENV.REDIS_PASSWORD}@redis:6379`);
    expect(loadConfig(scheduler).api.keys).toEqual([{ name: 'ops', key: DOT_ENV.API_KEYS.slice(4) }]);
    expect(new URL(scheduler.OPENAI_BASE_URL ?? '').port).toBe('4010');
  });

  it('runs each process through a CLI entry point that exists, llm-sim listening on every interface', () => {
    const expected: Record<string, string> = {
      scheduler: 'scheduler',
      executor: 'executor',
      archiver: 'archiver',
      'llm-sim': 'llm-sim',
    };
    for (const [name, subcommand] of Object.entries(expected)) {
      const command = commandOf(service(name));
      expect(command.slice(0, 2), name).toEqual(['agent-reach', subcommand]);
      expect(service(name).build, name).toBe('.');
    }
    // The image installs the packed CLI, whose bin (built JavaScript) is on its PATH.
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/^ENV PATH=\/app\/node_modules\/\.bin:\$PATH$/m);
    expect(dockerfile).toMatch(/npm install --omit=dev .*\/tarballs\/\*\.tgz/);
    const cli = JSON.parse(read('packages/cli/package.json')) as {
      publishConfig: { bin: Record<string, string> };
    };
    expect(cli.publishConfig.bin['agent-reach']).toBe('./dist/main.js');
    expect(read('packages/cli/src/main.ts')).toMatch(/case 'llm-sim':/);
    const sim = commandOf(service('llm-sim'));
    expect(sim.slice(2)).toEqual(['--port', '4010', '--host', '0.0.0.0']);
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
      // Rows group panels and hold no query of their own.
      for (const p of panels.filter((panel) => panel.type !== 'row')) {
        const where = `${file}: panel ${p.id} "${p.title}"`;
        expect(p.datasource, where).toEqual({ type: 'prometheus', uid: 'prometheus' });
        expect(p.targets?.length, where).toBeGreaterThan(0);
        for (const t of p.targets ?? []) expect(t.expr?.trim(), where).toBeTruthy();
        expect(p.fieldConfig?.defaults?.unit, where).toBeTruthy();
      }
    }
  });

  it('charts every required signal: calls, errors, latency, retries, breakers, queues, runs, steps, LLM, guards, throughput, group limits, config version', () => {
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
      'tool group concurrency limit': /agent_reach_tool_group_concurrency_limit\b/,
      'tool group rate limit':
        /agent_reach_tool_group_rate_limit_max \/ agent_reach_tool_group_rate_limit_window_seconds/,
      'configuration version per process': /agent_reach_config_version\b/,
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

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

// An address of this machine that is not loopback: where a metrics server on every interface answers.
const outward = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

describe.skipIf(outward === undefined)('the metrics address of a real executor process', () => {
  const children: Child[] = [];
  const redis = testRedis();
  afterAll(async () => {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => c.exited));
    await redis.cleanup();
  });

  const start = async (env: Record<string, string>) => {
    const child = startExecutorChild(`${redis.prefix}-${randomUUID().slice(0, 4)}`, env);
    children.push(child);
    return Number((await child.ready).metricsPort);
  };

  it('answers on loopback only by default', async () => {
    const port = await start({});
    expect(await accepts('127.0.0.1', port)).toBe(true);
    expect(await accepts(outward ?? '', port)).toBe(false);
  });

  it('answers on every interface with METRICS_HOST=0.0.0.0, as in the compose file', async () => {
    const port = await start({ METRICS_HOST: '0.0.0.0' });
    expect(await accepts(outward ?? '', port)).toBe(true);
  });
});
