import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createKeys } from '@agent-reach/protocol';
import { connectRedis, createLogger, type RedisClient } from '@agent-reach/shared';
import { startLlmSim, type LlmSim, type Scenario } from '@agent-reach/llm-sim';
import { RunControl } from '@agent-reach/scheduler';
import { ROOT, startExecutorWith, startSchedulerChild, type Child } from './processes.js';
import { testEnv } from './runs.js';
import { startPrivateRedis, type PrivateRedis } from './redis-server.js';
import type { PrivateCluster } from './redis-cluster.js';
import { EFFECTS_DIR_ENV, STARTS_FILE_ENV } from './fault-tools.js';
import { stallFigures, stallReport } from './stall.js';
import { forget, killOnExit } from './reaper.js';
import {
  checkCallOutcomes,
  checkRuns,
  countViolatingRuns,
  countViolations,
  FINAL_STATUSES,
  INVARIANTS,
  readStarts,
  runInput,
  runOfRequest,
  type CallOutcomes,
  type Invariant,
  type ModelRequest,
  type Violation,
} from './fault-check.js';

export { INVARIANTS, type Invariant, type Violation } from './fault-check.js';

/**
 * Short locks (as in chaos.test.ts) so that a paused or killed process's work is taken over within
 * seconds, and short shutdown grace periods so that a fleet-wide SIGTERM is over quickly.
 */
export const FAULT_ENV = {
  RUN_LOCK_DURATION_MS: '4000',
  RUN_STALLED_INTERVAL_MS: '1000',
  LOCK_DURATION_MS: '3000',
  STALLED_INTERVAL_MS: '1000',
  SCHEDULER_SHUTDOWN_GRACE_MS: '5000',
  SHUTDOWN_GRACE_MS: '5000',
};
const SHUTDOWN_GRACE_MS = 5000;
/** How much longer than its grace period a process may take to exit after SIGTERM (process teardown). */
const SHUTDOWN_SLACK_MS = 3000;

export const FAULT_AGENT = 'fault_agent';
export const TOOL_CALLS_PER_RUN = 6;
/** `recorded_effect` served by an MCP server over stdio (test/fixtures/fault-agents.yaml). */
export const MCP_FAULT_TOOL = 'effects__recorded_effect';

/**
 * The model side of the workload: 6 calls of `recorded_effect` over 4 tool turns (two of them with two
 * calls at once), then a final answer; the last call goes to the same tool served by an MCP server.
 * Three variants with different model latencies, so that runs started together are soon at different
 * steps.
 */
export function faultModelScenarios(): Scenario[] {
  const call = (step: number) => ({
    name: step === TOOL_CALLS_PER_RUN - 1 ? MCP_FAULT_TOOL : 'recorded_effect',
    arguments: { step, ms: 20 + ((step * 17) % 45) },
  });
  return [120, 200, 300].map((latency, v) => ({
    name: `faults-${v}`,
    latency_ms: latency,
    turns: [
      { tool_calls: [call(0)] },
      { tool_calls: [call(1), call(2)] },
      { tool_calls: [call(3)] },
      { tool_calls: [call(4), call(5)] },
      { content: 'all six effects done' },
    ],
  }));
}

type Role = 'scheduler' | 'executor';

interface Member {
  role: Role;
  index: number;
  child: Child;
  /** Set before the harness stops it on purpose: its exit is not a crash. */
  stopping: boolean;
  stopped: boolean;
}

/** Every live resource of the suite, so that a failed or interrupted test still cleans up. */
const live = new Set<() => Promise<void>>();

/** Kills every process and private Redis still alive (afterAll / process exit). */
export async function cleanupAll(): Promise<void> {
  const all = [...live];
  live.clear();
  await Promise.all(all.map((close) => close().catch(() => undefined)));
}

/**
 * Two schedulers and two executors as child processes. A process that exits without being told to is
 * noted as a crash and started again (as a supervisor would), so that the runs' invariants can still be
 * judged.
 */
export class Fleet {
  /** Processes that exited without being told to: which, exit code, and the error they printed. */
  readonly crashes: Array<{ name: string; code: number | null; error: string }> = [];
  readonly #members: Member[] = [];
  #closed = false;
  readonly #closer = () => this.close();

  constructor(
    private readonly env: Record<string, string>,
    private readonly size = { schedulers: 2, executors: 2 },
  ) {
    live.add(this.#closer);
  }

  /** Starts every process and waits until each is ready. */
  async start(): Promise<void> {
    const roles: Role[] = [
      ...Array.from({ length: this.size.executors }, () => 'executor' as const),
      ...Array.from({ length: this.size.schedulers }, () => 'scheduler' as const),
    ];
    const counters = { scheduler: 0, executor: 0 };
    const started = roles.map((role) => this.#spawn(role, counters[role]++));
    this.#members.splice(0, this.#members.length, ...started);
    await Promise.all(started.map((m) => m.child.ready));
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
    const child = role === 'scheduler' ? startSchedulerChild(this.env) : startExecutorWith(this.env);
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

/** What an injected fault can use and report. */
export interface FaultContext {
  fleet: Fleet;
  /** The private Redis, unless the scenario runs on a cluster. */
  redis: PrivateRedis | undefined;
  /** The Redis Cluster the scenario runs on (`FaultRunOptions.cluster`), if any. */
  cluster: PrivateCluster | undefined;
  /**
   * A connection of its own to the private Redis (to the first node of a cluster), for admin commands
   * (CLIENT PAUSE, CONFIG SET, …).
   */
  admin: Redis;
  /** Tool executions started so far (from the starts file, independent of Redis). */
  progress(): number;
  /** Waits until `more` further executions have started; false if that did not happen in `timeoutMs`. */
  waitProgress(more: number, timeoutMs: number): Promise<boolean>;
  note(name: string, value: string | number): void;
  violation(invariant: Invariant, subject: string, detail: string): void;
}

export interface FaultScenario {
  /** Short id (`pnpm faults --scenario <id>`). */
  id: string;
  /** What is done, as the end of a sentence ("… when <title>"). */
  title: string;
  /** Fraction of the workload's tool calls started before the fault is injected. */
  at?: number;
  inject(ctx: FaultContext): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Redis at `maxmemory` (noeviction, 100 KiB above what it used) for `ms`, then with room again. */
export function outOfMemory(ms: number): FaultScenario {
  return {
    id: 'redis-out-of-memory',
    title: `Redis reaches maxmemory (noeviction) for ${ms / 1000} s and then has room again`,
    async inject({ admin, note }) {
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', String(used + 100 * 1024));
      await sleep(ms);
      await admin.config('SET', 'maxmemory', '0');
      const oom = /errorstat_OOM:count=(\d+)/.exec(await admin.info('errorstats'))?.[1] ?? '0';
      note('commands refused with OOM', Number(oom));
    },
  };
}

export const SCENARIOS: readonly FaultScenario[] = [
  {
    id: 'scheduler-paused',
    title: 'a scheduler is paused (SIGSTOP) for 8 s, past its 4 s run lock, and then resumed',
    async inject({ fleet }) {
      fleet.signal('scheduler', 0, 'SIGSTOP');
      await sleep(8000);
      fleet.signal('scheduler', 0, 'SIGCONT');
    },
  },
  {
    id: 'redis-killed',
    title: 'Redis is killed (kill -9) mid-load and restarted from its AOF on the same port 4 s later',
    async inject({ redis }) {
      if (!redis) throw new Error('this scenario needs a single private Redis');
      await redis.kill9();
      await sleep(4000);
      await redis.restart();
    },
  },
  {
    id: 'redis-paused',
    title: 'Redis pauses every client (CLIENT PAUSE 3000 ALL) and later sleeps (DEBUG SLEEP 2) mid-load',
    async inject({ admin, waitProgress, note }) {
      await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
      await sleep(3000);
      if (await waitProgress(20, 20_000)) await admin.call('DEBUG', 'SLEEP', '2');
      else note('DEBUG SLEEP', 'skipped: no progress within 20 s after the pause');
    },
  },
  outOfMemory(8000),
  {
    id: 'fleet-sigterm',
    title: 'every scheduler and executor gets SIGTERM mid-load and the whole fleet is started again',
    at: 0.3,
    async inject({ fleet, note, violation }) {
      const bound = SHUTDOWN_GRACE_MS + SHUTDOWN_SLACK_MS;
      const exits = await fleet.terminateAll(bound + 5000);
      for (const e of exits) {
        note(
          `exit after SIGTERM: ${e.name}`,
          e.killed ? `still running after ${e.ms} ms, killed` : `${e.ms} ms, exit code ${e.code}`,
        );
        if (e.killed)
          violation(
            'unclean_shutdown',
            e.name,
            `did not exit within ${e.ms} ms (grace ${SHUTDOWN_GRACE_MS} ms)`,
          );
        else if (e.ms > bound)
          violation('unclean_shutdown', e.name, `exited after ${e.ms} ms (grace ${SHUTDOWN_GRACE_MS} ms)`);
        else if (e.code !== 0)
          violation('unclean_shutdown', e.name, `exited with code ${e.code}: ${e.error}`);
      }
      await fleet.start();
    },
  },
  {
    id: 'executor-killed',
    title: 'an executor (and the MCP server it started) is killed (kill -9) mid-load and started again',
    async inject({ fleet }) {
      await fleet.kill9('executor', 0);
    },
  },
  {
    id: 'executor-paused',
    title: 'an executor is paused (SIGSTOP) for 7 s, past its 3 s job lock, and then resumed',
    async inject({ fleet }) {
      fleet.signal('executor', 0, 'SIGSTOP');
      await sleep(7000);
      fleet.signal('executor', 0, 'SIGCONT');
    },
  },
];

/** No fault at all: the control that shows the checker finds nothing on an undisturbed workload. */
export const BASELINE: FaultScenario = {
  id: 'baseline',
  title: 'nothing is injected (control)',
  async inject() {},
};

export interface FaultRunOptions {
  /** Runs submitted before the fault. */
  runs: number;
  /** Longest wait for every run to end after the fault, in ms. */
  settleMs?: number;
  /**
   * Stop waiting early when nothing has moved for this long and every run left non-final has a job that
   * is over (completed, failed or gone): nothing will ever finish it. In ms.
   */
  quietMs?: number;
  /** Runs on this Redis Cluster (left running: the caller owns it) instead of a private Redis. */
  cluster?: PrivateCluster;
  /** Settings of the fleet's processes on top of `FAULT_ENV` (such as the production run lock). */
  env?: Record<string, string>;
}

export interface FaultReport {
  scenario: string;
  title: string;
  runs: number;
  statuses: Record<string, number>;
  violations: Violation[];
  /** Violations per invariant. */
  counts: Partial<Record<Invariant, number>>;
  /** Runs with a violation, per invariant. */
  runsViolating: Partial<Record<Invariant, number>>;
  figures: Record<string, string | number>;
  /** What became of the runs' calls (timeouts the scheduler gave itself, effects left behind). */
  calls: CallOutcomes;
}

/**
 * Runs one scenario end to end on a private Redis: llm-sim, 2 schedulers and 2 executors as child
 * processes, `runs` runs submitted through RunControl, the fault injected once the workload is under
 * way, a bounded wait for every run to end, then the invariants checked on the records.
 */
export async function runFaultScenario(
  scenario: FaultScenario,
  options: FaultRunOptions,
): Promise<FaultReport> {
  // Long enough for a run whose checkpoints kept failing to come back through the run job's backoff
  // (10 s at most between attempts, and longer for run jobs queued with BullMQ's exponential one): a
  // slow recovery is not a lost run.
  const settleMs = options.settleMs ?? 130_000;
  const quietMs = options.quietMs ?? 20_000;
  const figures: Record<string, string | number> = {};
  const extra: Violation[] = [];
  const work = mkdtempSync(path.join(os.tmpdir(), 'ar-faults-'));
  const startsFile = path.join(work, 'starts.jsonl');
  const effectsDir = path.join(work, 'effects');
  let redis: PrivateRedis | undefined;
  let sim: LlmSim | undefined;
  let fleet: Fleet | undefined;
  const connections: RedisClient[] = [];
  const queues: Queue[] = [];
  let control: RunControl | undefined;
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await fleet?.close();
    await withTimeout(control?.close(), 5000);
    for (const q of queues) await withTimeout(q.close(), 5000);
    for (const c of connections) c.disconnect();
    await sim?.close();
    await redis?.destroy();
    rmSync(work, { recursive: true, force: true });
  };
  live.add(release);
  try {
    if (!options.cluster) redis = await startPrivateRedis();
    const url = options.cluster?.url ?? (redis as PrivateRedis).url;
    sim = await startLlmSim({ scenarios: faultModelScenarios() });
    const prefix = `f${randomUUID().slice(0, 8)}`;
    const keys = createKeys(prefix);
    const env = testEnv(prefix, sim, {
      REDIS_URL: url,
      AGENTS_FILE: path.join(ROOT, 'test/fixtures/fault-agents.yaml'),
      TOOL_MODULES: path.join(ROOT, 'test/helpers/fault-tools.ts'),
      [STARTS_FILE_ENV]: startsFile,
      [EFFECTS_DIR_ENV]: effectsDir,
      // 60 % of the runs each: both schedulers hold runs when one is paused, and the other has room to
      // take its runs over at once.
      SCHEDULER_CONCURRENCY: String(Math.ceil(options.runs * 0.6)),
      ...FAULT_ENV,
      ...options.env,
    });
    fleet = new Fleet(env);
    const conn = connectRedis(url, 'worker', {
      connectionName: `${prefix}-faults-check`,
      // Its connection errors while Redis is down are the fault itself, not news.
      logger: createLogger('faults', { level: 'silent' }),
    });
    const admin = new Redis(url.split(',')[0] ?? url, {
      maxRetriesPerRequest: null,
      connectionName: `${prefix}-faults-admin`,
    });
    for (const c of [conn, admin]) {
      c.on('error', () => undefined);
      connections.push(c);
    }
    control = new RunControl(conn, keys);
    const runsQueue = control.queue as unknown as Queue;
    const toolsQueue = new Queue(keys.toolQueue('default'), {
      connection: conn,
      prefix: keys.queuePrefix(keys.toolQueue('default')),
    });
    queues.push(toolsQueue);
    // Connection errors while Redis is down are the fault itself, not news.
    for (const q of [runsQueue, toolsQueue]) q.on('error', () => undefined);
    const startAt = Date.now();
    await fleet.start();
    // The MCP server's tool is announced once an executor has started the server and listed its tools.
    await poll(
      async () => JSON.stringify(await conn.hgetall(keys.catalog)).includes(MCP_FAULT_TOOL),
      30_000,
      `an executor to announce ${MCP_FAULT_TOOL}`,
    );
    figures['fleet start ms'] = Date.now() - startAt;

    const runIds = Array.from(
      { length: options.runs },
      (_, i) => `${scenario.id}-${String(i).padStart(4, '0')}`,
    );
    const models = faultModelScenarios().map((s) => s.name);
    for (let i = 0; i < runIds.length; i += 50) {
      await Promise.all(
        runIds.slice(i, i + 50).map((runId, j) =>
          control!.start({
            runId,
            agent: FAULT_AGENT,
            input: runInput(runId),
            model: models[(i + j) % models.length],
          }),
        ),
      );
    }
    const totalCalls = options.runs * TOOL_CALLS_PER_RUN;
    const progress = () => countLines(startsFile);
    const trigger = Math.ceil(totalCalls * (scenario.at ?? 0.25));
    await poll(() => progress() >= trigger, 60_000, `${trigger} tool calls to start before the fault`);
    figures['tool executions started before the fault'] = progress();

    const ctx: FaultContext = {
      fleet,
      redis,
      cluster: options.cluster,
      admin,
      progress,
      async waitProgress(more, timeoutMs) {
        const target = progress() + more;
        return poll(() => progress() >= target, timeoutMs, '').then(
          () => true,
          () => false,
        );
      },
      note: (name, value) => (figures[name] = value),
      violation: (invariant, subject, detail) => extra.push({ invariant, subject, detail }),
    };
    const faultAt = Date.now();
    await scenario.inject(ctx);
    figures['fault duration ms'] = Date.now() - faultAt;

    // Wait for every run to end: bounded by settleMs, and cut short only when nothing has moved for
    // quietMs and no run left non-final has a job that could still drive it (waiting, delayed, active).
    const settleAt = Date.now();
    let nonFinal = runIds.length;
    let lastSignature = '';
    let lastChange = Date.now();
    for (;;) {
      const statuses = await statusesOf(conn, keys.runMeta, runIds).catch(() => undefined);
      if (statuses) nonFinal = statuses.filter((s) => !FINAL_STATUSES.includes(s ?? '')).length;
      const signature = `${nonFinal}|${sim.requests.length}|${progress()}`;
      if (signature !== lastSignature) {
        lastSignature = signature;
        lastChange = Date.now();
      }
      if (nonFinal === 0 || Date.now() - settleAt > settleMs) break;
      if (statuses && Date.now() - lastChange > quietMs) {
        const open = runIds.filter((_, i) => !FINAL_STATUSES.includes(statuses[i] ?? ''));
        const jobs = await Promise.all(open.map((id) => runsQueue.getJobState(id))).catch(() => undefined);
        if (jobs?.every((j) => j === 'completed' || j === 'failed' || j === 'unknown')) break;
      }
      await sleep(250);
    }
    figures['wait for final statuses ms'] = Date.now() - settleAt;
    // Then let stragglers (a resumed stale process, late duplicates) finish writing before judging.
    const quietAt = Date.now();
    let lastRequests = -1;
    let stableSince = Date.now();
    while (Date.now() - quietAt < 15_000) {
      const counts = await Promise.all([
        runsQueue.getJobCounts('active', 'waiting'),
        toolsQueue.getJobCounts('active', 'waiting', 'delayed'),
      ]).catch(() => undefined);
      const busy = counts ? Object.values({ ...counts[0] }).reduce((a, b) => a + b, 0) : 1;
      const toolsBusy = counts ? Object.values({ ...counts[1] }).reduce((a, b) => a + b, 0) : 1;
      const n = sim.requests.length + progress();
      if (n !== lastRequests) {
        lastRequests = n;
        stableSince = Date.now();
      }
      if ((nonFinal > 0 || (busy === 0 && toolsBusy === 0)) && Date.now() - stableSince >= 1500) break;
      await sleep(250);
    }
    figures['wait for quiet ms'] = Date.now() - quietAt;

    const starts = await readStarts(conn, keys, startsFile);
    const checked = await checkRuns({ redis: conn, keys, runIds, requests: sim.requests, starts, runsQueue });
    const violations = [...checked.violations, ...extra];
    const executions = [...starts.values()];
    figures['tool calls started'] = executions.length;
    figures['tool calls started more than once'] = executions.filter((n) => n > 1).length;
    figures['model requests'] = sim.requests.length;
    const turns = new Map<string, number>();
    for (const r of sim.requests) {
      const runId = runOfRequest(r.body);
      if (runId === undefined || r.turn === null) continue;
      const key = `${runId}#${r.turn}`;
      turns.set(key, (turns.get(key) ?? 0) + 1);
    }
    figures['model turns asked more than once'] = [...turns.values()].filter((n) => n > 1).length;
    figures['MCP tool calls the model saw answered ok'] = mcpCallsAnsweredOk(sim.requests);
    const epochs = await epochsOf(conn, keys.runMeta, runIds);
    if (epochs.some((e) => e !== undefined))
      figures['runs claimed by a scheduler more than once (meta epoch > 1)'] = epochs.filter(
        (e) => (e ?? 0) > 1,
      ).length;
    figures['model requests answered 200'] = sim.requests.filter((r) => r.status === 200).length;
    figures['process crashes (restarted)'] = fleet.crashes.length;
    for (const [outcome, n] of Object.entries(checked.outcomes)) figures[`runs ended ${outcome}`] = n;
    Object.assign(figures, stallReport(stallFigures({ faultAt, startsFile, requests: sim.requests })));
    const calls = await checkCallOutcomes({ redis: conn, keys, runIds, effectsDir });
    figures['calls answered timeout with 0 attempts'] = calls.timeoutsWithoutAttempt.length;
    figures['calls of succeeded runs without their effect file'] = calls.withoutEffect.length;
    for (const c of fleet.crashes.toReversed())
      violations.unshift({
        invariant: 'process_crashed',
        subject: c.name,
        detail: `exited with code ${c.code}: ${c.error}`,
      });
    return {
      scenario: scenario.id,
      title: scenario.title,
      runs: runIds.length,
      statuses: checked.statuses,
      violations,
      counts: countViolations(violations),
      runsViolating: countViolatingRuns(violations),
      figures,
      calls,
    };
  } finally {
    live.delete(release);
    await release();
  }
}

/** The report as text: figures, violations per invariant, and up to `examples` violations named. */
export function formatReport(report: FaultReport, examples = 10): string {
  const lines = [
    `${report.scenario}: ${report.title}`,
    `  runs: ${report.runs}; statuses: ${Object.entries(report.statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ];
  for (const [k, v] of Object.entries(report.figures)) lines.push(`  ${k}: ${v}`);
  const invariants = Object.keys(report.counts) as Invariant[];
  if (invariants.length === 0) lines.push('  violations: none');
  // Examples spread over the invariants, so that a frequent one does not hide the others.
  const each = Math.max(2, Math.floor(examples / Math.max(1, invariants.length)));
  for (const inv of invariants) {
    lines.push(
      `  VIOLATED ${inv} (${INVARIANTS[inv]}): ${report.counts[inv]} violations in ${report.runsViolating[inv]} runs/processes`,
    );
    const mine = report.violations.filter((v) => v.invariant === inv);
    for (const v of mine.slice(0, each)) lines.push(`    - ${v.subject}: ${v.detail}`);
    if (mine.length > each) lines.push(`    … and ${mine.length - each} more`);
  }
  return lines.join('\n');
}

async function statusesOf(
  redis: RedisClient,
  metaKey: (runId: string) => string,
  runIds: readonly string[],
): Promise<Array<string | null>> {
  // One command per run, sent together: on a cluster the runs are on different slots.
  return Promise.all(runIds.map((id) => redis.hget(metaKey(id), 'status')));
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

/** Calls of the MCP-served tool that some model request answered `ok` (each counted once). */
function mcpCallsAnsweredOk(requests: readonly ModelRequest[]): number {
  interface Message {
    role?: string;
    tool_call_id?: string;
    content?: unknown;
    tool_calls?: Array<{ id: string; function: { name: string } }>;
  }
  const ok = new Set<string>();
  for (const r of requests) {
    const messages = (r.body as { messages?: Message[] } | undefined)?.messages ?? [];
    const mcp = new Set(
      messages
        .flatMap((m) => m.tool_calls ?? [])
        .filter((c) => c.function.name === MCP_FAULT_TOOL)
        .map((c) => c.id),
    );
    for (const m of messages)
      if (m.role === 'tool' && mcp.has(m.tool_call_id ?? '') && String(m.content).includes('"ok":true'))
        ok.add(`${runOfRequest(r.body)}/${m.tool_call_id}`);
  }
  return ok.size;
}

/** The ownership epoch of each run's record (bumped on every claim), where the record has one. */
async function epochsOf(
  redis: RedisClient,
  metaKey: (runId: string) => string,
  runIds: readonly string[],
): Promise<Array<number | undefined>> {
  const epochs = await Promise.all(runIds.map((id) => redis.hget(metaKey(id), 'epoch').catch(() => null)));
  return epochs.map((v) => (typeof v === 'string' ? Number(v) : undefined));
}

function countLines(file: string): number {
  if (!existsSync(file)) return 0;
  const text = readFileSync(file, 'utf8');
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n += 1;
  return n;
}

async function poll(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

async function withTimeout(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!p) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
