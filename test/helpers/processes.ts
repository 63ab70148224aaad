import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { childEnv, entryPoint, nodeArgs } from './node-run.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const TEST_TOOLS = path.join(ROOT, 'test/helpers/test-tools.ts');
export const TEST_AGENTS = path.join(ROOT, 'test/fixtures/agents.yaml');

export interface Child {
  proc: ChildProcess;
  ready: Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  /** Resolves when the child reports an IPC message of this type. */
  message(type: string): Promise<Record<string, unknown>>;
  output(): string;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Forks a package's main.ts (its built JavaScript when fresh, see node-run.ts); `ready` resolves on the
 * child's `{ type: 'ready' }` IPC message.
 */
export function startChild(script: string, env: Record<string, string>, args: string[] = []): Child {
  const proc = fork(entryPoint(script), args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...childEnv(env) },
    execArgv: nodeArgs(),
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.on('message', (m: Record<string, unknown>) => {
      if (m?.type === 'ready') resolve(m);
    });
    void exited.then((code) => reject(new Error(`${script} exited (${code}) before it was ready:\n${out}`)));
  });
  ready.catch(() => undefined);
  const message = (type: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      proc.on('message', (m: Record<string, unknown>) => {
        if (m?.type === type) resolve(m);
      });
    });
  return { proc, ready, exited, message, output: () => out, kill: (signal = 'SIGTERM') => proc.kill(signal) };
}

/** Starts an executor process serving the test tools under the given key prefix. */
export function startExecutorChild(prefix: string, env: Record<string, string> = {}): Child {
  return startChild('packages/executor/src/main.ts', {
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: TEST_AGENTS,
    TOOL_MODULES: TEST_TOOLS,
    EXECUTOR_METRICS_PORT: '0',
    OUTPUTS_DIR: path.join(ROOT, 'outputs', 'test'),
    ...env,
  });
}

/** Starts a scheduler process with the given environment (see `testEnv`). */
export function startSchedulerChild(env: Record<string, string>): Child {
  return startChild('packages/scheduler/src/main.ts', env);
}

/** Starts an executor process with the given environment (see `testEnv`). */
export function startExecutorWith(env: Record<string, string>): Child {
  return startChild('packages/executor/src/main.ts', env);
}

/** Waits until every child runs under configuration `version` (its own /metrics says so). */
export async function atConfigVersion(children: Child[], version: number): Promise<void> {
  for (const child of children) {
    const port = String((await child.ready).metricsPort);
    const end = Date.now() + 15_000;
    for (;;) {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      if (/^agent_reach_config_version (\d+)$/m.exec(text)?.[1] === String(version)) break;
      if (Date.now() > end) throw new Error(`config version ${version} not reached on port ${port}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}
