import { startArchiverChild, startExecutorWith, startSchedulerChild, type Child } from './processes.js';
import { forget, killOnExit } from './reaper.js';

const START: Record<Role, (env: Record<string, string>) => Child> = {
  scheduler: startSchedulerChild,
  executor: startExecutorWith,
  archiver: startArchiverChild,
};

export type Role = 'scheduler' | 'executor' | 'archiver';

interface Member {
  role: Role;
  index: number;
  child: Child;
  /** Set before the harness stops it on purpose: its exit is not a crash. */
  stopping: boolean;
  stopped: boolean;
}

/** Every live resource of the suite, so that a failed or interrupted test still cleans up. */
export const live = new Set<() => Promise<void>>();

/** Kills every process and private Redis still alive (afterAll / process exit). */
export async function cleanupAll(): Promise<void> {
  const all = [...live];
  live.clear();
  await Promise.all(all.map((close) => close().catch(() => undefined)));
}

/**
 * Two schedulers and two executors (and archivers, with the archive on) as child processes. A process that exits without being told to is
 * noted as a crash and started again (as a supervisor would), so that the runs' invariants can still be
 * judged.
 */
export class Fleet {
  /** Processes that exited without being told to: which, exit code, and the error they printed. */
  readonly crashes: Array<{ name: string; code: number | null; error: string }> = [];
  readonly #members: Member[] = [];
  readonly env: Record<string, string>;
  #closed = false;
  readonly #closer = () => this.close();

  constructor(
    env: Record<string, string>,
    private readonly size = { schedulers: 2, executors: 2, archivers: 0 },
  ) {
    this.env = { ...env };
    live.add(this.#closer);
  }

  /** Starts every process and waits until each is ready. */
  async start(): Promise<void> {
    const roles: Role[] = [
      ...Array.from({ length: this.size.executors }, () => 'executor' as const),
      ...Array.from({ length: this.size.schedulers }, () => 'scheduler' as const),
      ...Array.from({ length: this.size.archivers }, () => 'archiver' as const),
    ];
    const counters = { scheduler: 0, executor: 0, archiver: 0 };
    const started = roles.map((role) => this.#spawn(role, counters[role]++));
    this.#members.splice(0, this.#members.length, ...started);
    await Promise.all(started.map((m) => m.child.ready));
  }

  /** Settings of the processes started from now on (an upgrade's new release, say); running ones keep theirs. */
  setEnv(changes: Record<string, string>): void {
    Object.assign(this.env, changes);
  }

  member(role: Role, index: number): Member {
    const m = this.#members.find((x) => x.role === role && x.index === index);
    if (!m) throw new Error(`no ${role} ${index}`);
    return m;
  }

  /** Sends a signal to one process (SIGSTOP / SIGCONT to pause and resume it). */
  signal(role: Role, index: number, signal: NodeJS.Signals): void {
    const m = this.member(role, index);
    m.stopped = signal === 'SIGSTOP';
    m.child.kill(signal);
  }

  /** `kill -9` one process and start it again in its place, as a supervisor would (not a crash). */
  async kill9(role: Role, index: number): Promise<void> {
    const m = this.member(role, index);
    m.stopping = true;
    m.child.kill('SIGKILL');
    await m.child.exited;
    const next = this.#spawn(role, index);
    const i = this.#members.indexOf(m);
    if (i >= 0) this.#members[i] = next;
    await next.child.ready;
  }

  /**
   * SIGTERM to every process at once; waits for each to exit, up to `boundMs`, then SIGKILLs what is left.
   * Returns how long each took.
   */
  async terminateAll(
    boundMs: number,
  ): Promise<Array<{ name: string; ms: number; killed: boolean; code: number | null; error: string }>> {
    const t0 = Date.now();
    const members = [...this.#members];
    for (const m of members) {
      m.stopping = true;
      m.child.kill('SIGTERM');
    }
    return Promise.all(
      members.map(async (m) => {
        const name = `${m.role} ${m.index} (pid ${m.child.proc.pid})`;
        let timer: NodeJS.Timeout | undefined;
        const inTime = await Promise.race([
          m.child.exited.then(() => true),
          new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), boundMs))),
        ]);
        clearTimeout(timer);
        const ms = Date.now() - t0;
        if (!inTime) m.child.kill('SIGKILL');
        const code = await m.child.exited;
        return { name, ms, killed: !inTime, code, error: code === 0 ? '' : crashError(m.child.output()) };
      }),
    );
  }

  /** Kills every process and waits for them to exit. */
  async close(): Promise<void> {
    this.#closed = true;
    live.delete(this.#closer);
    const members = [...this.#members];
    for (const m of members) {
      m.stopping = true;
      m.child.kill('SIGKILL');
    }
    await Promise.all(members.map((m) => m.child.exited));
  }

  #spawn(role: Role, index: number): Member {
    const child = START[role](this.env);
    const m: Member = { role, index, child, stopping: false, stopped: false };
    killOnExit(child.proc.pid);
    void child.exited.then((code) => {
      forget(child.proc.pid);
      if (m.stopping || this.#closed) return;
      this.crashes.push({
        name: `${role} ${index} (pid ${child.proc.pid})`,
        code,
        error: crashError(child.output()),
      });
      this.#restartLater(m);
    });
    return m;
  }

  #restartLater(m: Member): void {
    if (this.crashes.length > 20) return; // a crash loop: the invariants will say what it left behind
    setTimeout(() => {
      if (this.#closed) return;
      const next = this.#spawn(m.role, m.index);
      next.child.ready.catch(() => undefined);
      const i = this.#members.indexOf(m);
      if (i >= 0) this.#members[i] = next;
    }, 1000).unref();
  }
}

/** The error a crashed process printed last (its first line and its code), from the end of its output. */
function crashError(output: string): string {
  const lines = output.slice(-6000).split('\n');
  const first = lines.findIndex((l) => /^\s*(\w*Error|Error)\b/.test(l) && !l.trimStart().startsWith('{'));
  if (first < 0)
    return (
      lines
        .filter((l) => l.trim())
        .slice(-2)
        .join(' | ') || '(no output)'
    );
  const code = lines.slice(first).find((l) => /^\s*code: /.test(l));
  return [lines[first], code]
    .filter(Boolean)
    .map((l) => l!.trim())
    .join(' ');
}
