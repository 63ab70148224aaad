import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { ROOT } from './processes.js';

/**
 * YAML 1.2 with merge keys (`<<: *anchor`, as docker compose reads them). `yaml` is a dependency of
 * @agent-reach/shared, not of the workspace root, so it is resolved from there.
 */
export function parseYaml(text: string): unknown {
  const yaml = createRequire(path.join(ROOT, 'packages/shared/package.json'))('yaml') as {
    parse(src: string, options: { merge: boolean }): unknown;
  };
  return yaml.parse(text, { merge: true });
}

/** Whether an executable of that name is on PATH. */
export function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      accessSync(path.join(dir, name), fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A loopback port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, feeding `stdin`, killing it after `timeoutMs`. */
export function run(command: string, args: string[], stdin = '', timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    proc.stdin.end(stdin);
  });
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromQueryResult {
  status: 'success' | 'error';
  error?: string;
  errorType?: string;
  data?: { resultType: string; result: PromSample[] };
}

export interface Prometheus {
  url: string;
  proc: ChildProcess;
  output(): string;
  /** An instant query through the HTTP API (`/api/v1/query`). */
  query(expr: string): Promise<PromQueryResult>;
  /** GET of an API path, parsed. */
  api<T>(pathname: string): Promise<T>;
  /** SIGTERM, then SIGKILL if it has not exited within 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts a real `prometheus` on a free loopback port with its TSDB in `dataDir`, and resolves once it
 * answers `/-/ready` (or rejects with its output when it exits or does not get ready in time).
 */
export async function startPrometheus(
  configFile: string,
  dataDir: string,
  timeoutMs = 15_000,
): Promise<Prometheus> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${dataDir}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  const api = async <T>(pathname: string): Promise<T> => {
    const res = await fetch(`${url}${pathname}`);
    return (await res.json()) as T;
  };
  const prometheus: Prometheus = {
    url,
    proc,
    output: () => out,
    api,
    query: (expr) => api<PromQueryResult>(`/api/v1/query?query=${encodeURIComponent(expr)}`),
    async stop() {
      if (exitCode !== undefined) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (exitCode !== undefined)
      throw new Error(`prometheus exited (${exitCode}) before it was ready:\n${out}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return prometheus;
    if (Date.now() > end) {
      await prometheus.stop();
      throw new Error(`prometheus was not ready within ${timeoutMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Grafana's built-in interval variables, replaced for a direct Prometheus query. */
const GRAFANA_VARIABLES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\$__rate_interval\b/g, '5m'],
  [/\$__interval\b/g, '15s'],
  [/\$__range\b/g, '5m'],
];

export interface DashboardPanel {
  id?: number;
  type?: string;
  title?: string;
  datasource?: { type?: string; uid?: string } | string | null;
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: Array<{ refId?: string; expr?: string; datasource?: unknown }>;
  panels?: DashboardPanel[];
}

/** Every panel of a dashboard, those inside collapsed rows included. */
export function allPanels(dashboard: { panels?: DashboardPanel[] }): DashboardPanel[] {
  return (dashboard.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** A panel query as Prometheus can run it: Grafana's interval variables replaced by fixed windows. */
export function toPromQl(expr: string): string {
  return GRAFANA_VARIABLES.reduce((e, [pattern, value]) => e.replace(pattern, value), expr);
}

/**
 * The vector selectors of an expression (`name{matchers}`, or a bare `{__name__=~…}`), without range
 * or function wrappers: how an alert that returns data only while firing is checked against real
 * series. Quoted strings (label_replace arguments, matcher values) are skipped as selectors.
 */
export function vectorSelectors(expr: string): string[] {
  const found = new Set<string>();
  const pattern =
    /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|([a-zA-Z_:][a-zA-Z0-9_:]*)?(\{[^}]*\})|([a-zA-Z_:][a-zA-Z0-9_:]*)/g;
  const keywords = new Set([
    'by',
    'without',
    'on',
    'ignoring',
    'group_left',
    'group_right',
    'and',
    'or',
    'unless',
    'bool',
    'offset',
  ]);
  for (let m = pattern.exec(expr); m !== null; m = pattern.exec(expr)) {
    const [whole, nameWithBraces, braces, bare] = m;
    if (whole.startsWith('"') || whole.startsWith("'")) continue;
    const after = expr.slice(m.index + whole.length).trimStart();
    if (braces !== undefined) {
      found.add(`${nameWithBraces ?? ''}${braces}`);
      continue;
    }
    // A bare identifier is a selector unless it is a function call, a keyword, a grouping label list or a number.
    // `sum by (…) (…)`: an aggregation whose grouping comes first.
    if (bare === undefined || keywords.has(bare) || after.startsWith('(') || /^(by|without)\b/.test(after))
      continue;
    const before = expr.slice(0, m.index).trimEnd();
    if (/(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/.test(before)) continue;
    if (/\[[^\]]*$/.test(before)) continue; // inside a range like [5m]
    found.add(bare);
  }
  return [...found];
}
