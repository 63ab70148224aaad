import { fork, type ChildProcess } from 'node:child_process';
import { childEnv, entryPoint, nodeArgs, ROOT } from './node-run.js';

export { ROOT, DIST_CONDITION, distIsFresh, nodeArgs, entryPoint, childEnv, cliArgs } from './node-run.js';
export { answers, freePort, probeRedis, startPrivateRedis, type PrivateRedis } from './private-redis.js';
export { killOnExit, forget } from './reaper.js';

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

/** Starts a scheduler process with the given environment. */
export function startSchedulerChild(env: Record<string, string>): Child {
  return startChild('packages/scheduler/src/main.ts', env);
}

/** Starts an executor process with the given environment. */
export function startExecutorWith(env: Record<string, string>): Child {
  return startChild('packages/executor/src/main.ts', env);
}

/** Starts an archiver process (`agent-reach archiver`) with the given environment. */
export function startArchiverChild(env: Record<string, string>): Child {
  return startChild('packages/archive/src/main.ts', env);
}
