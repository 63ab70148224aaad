import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createKeys, runJob, type Keys } from '@agent-reach/protocol';
import { connectRedis, createLogger, type RedisClient } from '@agent-reach/shared';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { ArchiveStore, createPool, deadLetterKey, outboxKey } from '@agent-reach/archive';
import { RunControl } from '@agent-reach/scheduler';
import { RunStore } from '@agent-reach/scheduler/internal';
import {
  checkArchive,
  createFaultArchive,
  DEFAULT_POSTGRES_URL,
  waitArchived,
  type FaultArchive,
} from './archive-check.js';
import {
  checkCallOutcomes,
  checkRuns,
  countViolatingRuns,
  countViolations,
  FINAL_STATUSES,
  readStarts,
  runInput,
  runOfRequest,
  type CallOutcomes,
  type Invariant,
  type ModelRequest,
  type Violation,
} from './fault-check.js';
import { EFFECTS_DIR_ENV, STARTS_FILE_ENV } from './fault-tools.js';
import { Fleet, live } from './fleet.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';
import { startPrivateRedis, type PrivateRedis } from './private-redis.js';
import type { ClusterTarget, FaultContext, FaultScenario, ScenarioAttachment } from './scenarios.js';
import { stallFigures, stallReport } from './stall.js';
import { countLines, poll, sleep, withTimeout } from './util.js';
import {
  FAULT_AGENT,
  FAULT_ENV,
  faultModelScenarios,
  fleetEnv,
  MCP_FAULT_TOOL,
  TOOL_CALLS_PER_RUN,
} from './workload.js';

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
  cluster?: ClusterTarget;
  /**
   * The archive on: a database of the scenario's own on this PostgreSQL (a server URL; the database
   * in it is only what new ones are created from), `DATABASE_URL` for the schedulers, and an archiver in
   * the fleet; the archive's invariants are checked too. Scenarios of the archive turn it on by
   * themselves (with `DEFAULT_POSTGRES_URL` unless given here).
   */
  postgresUrl?: string;
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

/** Everything one scenario runs on, started by `startHarness` and released by `release` (once). */
interface Harness {
  sim: LlmSim;
  fleet: Fleet;
  redis: PrivateRedis | undefined;
  archive: FaultArchive | undefined;
  /** The archive's PostgreSQL server of the scenario's own (`privatePostgres`). */
  postgres: PrivatePostgres | undefined;
  /** The harness's own connection (checks) and an admin connection (faults). */
  conn: RedisClient;
  admin: Redis;
  keys: Keys;
  control: RunControl;
  runsQueue: Queue;
  toolsQueue: Queue;
  startsFile: string;
  effectsDir: string;
  /** What the scenario's `attach` started. */
  attachment: ScenarioAttachment | undefined;
  /** Tool executions started so far (lines of the starts file). */
  progress(): number;
  release(): Promise<void>;
}

/**
 * Starts what a scenario runs on: a private Redis (unless on a cluster), llm-sim, the archive's database
 * when on, and the fleet, each registered for cleanup as soon as it exists; then waits for the fleet.
 */
async function startHarness(scenario: FaultScenario, options: FaultRunOptions): Promise<Harness> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'ar-faults-'));
  const parts: Partial<Harness> & { connections: RedisClient[]; queues: Queue[] } = {
    connections: [],
    queues: [],
  };
  let releasing: Promise<void> | undefined;
  let assembling: Promise<unknown> = Promise.resolve();
  // A cleanup of the whole suite (afterAll, exit) lets a harness still starting finish first, so that
  // no process it starts afterwards is left behind.
  const releaseWhenStarted = async () => {
    await assembling.catch(() => undefined);
    await release();
  };
  // Once, and a cleanup of the whole suite that comes while it is under way waits for it.
  const release = () => (releasing ??= teardown().finally(() => live.delete(releaseWhenStarted)));
  const teardown = async () => {
    await parts.fleet?.close();
    await parts.attachment?.close().catch(() => undefined);
    await withTimeout(parts.control?.close(), 5000);
    for (const q of parts.queues) await withTimeout(q.close(), 5000);
    for (const c of parts.connections) c.disconnect();
    await parts.sim?.close();
    await parts.redis?.destroy();
    await parts.archive?.drop().catch(() => undefined);
    await parts.postgres?.destroy();
    rmSync(work, { recursive: true, force: true });
  };
  live.add(releaseWhenStarted);
  try {
    const harness = assemble(scenario, options, work, parts, release);
    assembling = harness;
    return await harness;
  } catch (err) {
    await release();
    throw err;
  }
}

async function assemble(
  scenario: FaultScenario,
  options: FaultRunOptions,
  work: string,
  parts: Partial<Harness> & { connections: RedisClient[]; queues: Queue[] },
  release: () => Promise<void>,
): Promise<Harness> {
  if (!options.cluster) parts.redis = await startPrivateRedis();
  const url = options.cluster?.url ?? parts.redis!.url;
  const sim = (parts.sim = await startLlmSim({ scenarios: faultModelScenarios() }));
  if (scenario.privatePostgres) parts.postgres = await startPrivatePostgres();
  const postgresUrl =
    parts.postgres?.url ?? options.postgresUrl ?? (scenario.archive ? DEFAULT_POSTGRES_URL : undefined);
  const archive = postgresUrl ? (parts.archive = await createFaultArchive(postgresUrl)) : undefined;
  const prefix = `f${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const attachment = (parts.attachment = await scenario.attach?.(work));
  const startsFile = path.join(work, 'starts.jsonl');
  const effectsDir = path.join(work, 'effects');
  const env = fleetEnv(prefix, url, sim, {
    [STARTS_FILE_ENV]: startsFile,
    [EFFECTS_DIR_ENV]: effectsDir,
    // 60 % of the runs each: both schedulers hold runs when one is paused, and the other has room to
    // take its runs over at once.
    SCHEDULER_CONCURRENCY: String(Math.ceil(options.runs * 0.6)),
    ...FAULT_ENV,
    ...(archive ? ARCHIVE_ENV(archive.url) : {}),
    ...attachment?.env,
    ...options.env,
  });
  const fleet = (parts.fleet = new Fleet(env, { schedulers: 2, executors: 2, archivers: archive ? 1 : 0 }));
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
    parts.connections.push(c);
  }
  const control = (parts.control = new RunControl(conn, keys));
  const runsQueue = control.queue as unknown as Queue;
  const toolsQueue = new Queue(keys.toolQueue('default'), {
    connection: conn,
    prefix: keys.queuePrefix(keys.toolQueue('default')),
  });
  parts.queues.push(toolsQueue);
  // Connection errors while Redis is down are the fault itself, not news.
  for (const q of [runsQueue, toolsQueue]) q.on('error', () => undefined);
  await fleet.start();
  // The MCP server's tool is announced once an executor has started the server and listed its tools.
  await poll(
    async () => JSON.stringify(await conn.hgetall(keys.catalog)).includes(MCP_FAULT_TOOL),
    30_000,
    `an executor to announce ${MCP_FAULT_TOOL}`,
  );
  return {
    sim,
    fleet,
    redis: parts.redis,
    archive,
    postgres: parts.postgres,
    conn,
    admin,
    keys,
    control,
    runsQueue,
    toolsQueue,
    startsFile,
    effectsDir,
    attachment,
    progress: () => countLines(startsFile),
    release,
  };
}

/**
 * The archive's settings for the fleet: a short visibility timeout so that a killed archiver's batch is
 * taken over within seconds, and finished runs kept in Redis past the checks (which compare the archived
 * record with Redis's).
 */
const ARCHIVE_ENV = (databaseUrl: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  ARCHIVE_VISIBILITY_TIMEOUT_MS: '2000',
  ARCHIVE_BATCH_SIZE: '20',
  ARCHIVED_RUN_RETENTION_S: '900',
});

/** Submits the runs (50 at a time), each with one of the workload's model variants; returns their ids. */
async function submitRuns(h: Harness, scenario: FaultScenario, runs: number): Promise<string[]> {
  const runIds = Array.from({ length: runs }, (_, i) => `${scenario.id}-${String(i).padStart(4, '0')}`);
  const models = faultModelScenarios().map((s) => s.name);
  for (let i = 0; i < runIds.length; i += 50) {
    await Promise.all(
      runIds.slice(i, i + 50).map((runId, j) =>
        h.control.enqueue(
          runJob({
            run_id: runId,
            agent: FAULT_AGENT,
            input: scenario.input?.(runId, i + j) ?? runInput(runId),
            model: models[(i + j) % models.length],
            created_at: Date.now(),
            callback: h.attachment?.callback?.(runId),
          }),
        ),
      ),
    );
  }
  return runIds;
}

/** Waits for the workload to be under way (`scenario.at` of its calls started), then injects the fault. */
async function injectFault(
  h: Harness,
  scenario: FaultScenario,
  options: FaultRunOptions,
  runIds: readonly string[],
  figures: Record<string, string | number>,
  extra: Violation[],
): Promise<number> {
  const trigger = Math.ceil(runIds.length * TOOL_CALLS_PER_RUN * (scenario.at ?? 0.25));
  await poll(() => h.progress() >= trigger, 60_000, `${trigger} tool calls to start before the fault`);
  figures['tool executions started before the fault'] = h.progress();
  const ctx: FaultContext = {
    fleet: h.fleet,
    redis: h.redis,
    cluster: options.cluster,
    archive: h.archive,
    postgres: h.postgres,
    outboxKey: outboxKey(h.keys),
    admin: h.admin,
    progress: h.progress,
    async waitProgress(more, timeoutMs) {
      const target = h.progress() + more;
      return poll(() => h.progress() >= target, timeoutMs, '').then(
        () => true,
        () => false,
      );
    },
    note: (name, value) => (figures[name] = value),
    violation: (invariant, subject, detail) => extra.push({ invariant, subject, detail }),
    attachment: h.attachment,
  };
  const faultAt = Date.now();
  // The archive's faults must not reach a run Redis holds: it is read throughout, as the API reads it.
  const reading = scenario.archive && h.archive ? readLiveRuns(h, h.archive.url, runIds) : undefined;
  await scenario.inject(ctx);
  figures['fault duration ms'] = Date.now() - faultAt;
  if (reading) {
    const reads = await reading.stop();
    figures['live reads during the fault'] = reads.answered + reads.failed.length;
    figures['live reads not answered'] = reads.failed.length;
    for (const f of reads.failed.slice(0, 20))
      extra.push({ invariant: 'live_read_failed', subject: f.runId, detail: f.error });
  }
  return faultAt;
}

/**
 * Reads runs Redis holds (listing, record, events) through a run store that has the archive, as the API
 * does, over and over until stopped; counts the reads answered and those that failed.
 */
function readLiveRuns(
  h: Harness,
  databaseUrl: string,
  runIds: readonly string[],
): { stop(): Promise<{ answered: number; failed: Array<{ runId: string; error: string }> }> } {
  const pool = createPool(databaseUrl, { max: 2, statementTimeoutMs: 5000, onError: () => undefined });
  const archived = new ArchiveStore(pool);
  const store = new RunStore(h.conn, h.keys, {
    archive: { handOff: async () => undefined, record: (runId) => archived.record(runId) },
  });
  let stopped = false;
  let answered = 0;
  const failed: Array<{ runId: string; error: string }> = [];
  const loop = (async () => {
    for (let i = 0; !stopped; i += 1) {
      const runId = runIds[(i * 7) % runIds.length]!;
      try {
        await Promise.all([store.summary(runId), store.load(runId), store.events(runId)]);
        answered += 1;
      } catch (err) {
        failed.push({ runId, error: err instanceof Error ? err.message : String(err) });
      }
      await sleep(50);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await pool.end().catch(() => undefined);
      return { answered, failed };
    },
  };
}

/**
 * Waits for every run to end: bounded by settleMs, and cut short only when nothing has moved for quietMs
 * and no run left non-final has a job that could still drive it (waiting, delayed, active). Returns how
 * many runs are still not final.
 */
async function waitForFinal(
  h: Harness,
  runIds: readonly string[],
  settleMs: number,
  quietMs: number,
): Promise<number> {
  const settleAt = Date.now();
  let nonFinal = runIds.length;
  let lastSignature = '';
  let lastChange = Date.now();
  for (;;) {
    const statuses = await statusesOf(h.conn, h.keys.runMeta, runIds).catch(() => undefined);
    if (statuses) nonFinal = statuses.filter((s) => !FINAL_STATUSES.includes(s ?? '')).length;
    const signature = `${nonFinal}|${h.sim.requests.length}|${h.progress()}`;
    if (signature !== lastSignature) {
      lastSignature = signature;
      lastChange = Date.now();
    }
    if (nonFinal === 0 || Date.now() - settleAt > settleMs) return nonFinal;
    if (statuses && Date.now() - lastChange > quietMs) {
      const open = runIds.filter((_, i) => !FINAL_STATUSES.includes(statuses[i] ?? ''));
      const jobs = await Promise.all(open.map((id) => h.runsQueue.getJobState(id))).catch(() => undefined);
      if (jobs?.every((j) => j === 'completed' || j === 'failed' || j === 'unknown')) return nonFinal;
    }
    await sleep(250);
  }
}

/** Lets stragglers (a resumed stale process, late duplicates) finish writing before the runs are judged. */
async function waitForQuiet(h: Harness, nonFinal: number): Promise<void> {
  const quietAt = Date.now();
  let lastRequests = -1;
  let stableSince = Date.now();
  while (Date.now() - quietAt < 15_000) {
    const counts = await Promise.all([
      h.runsQueue.getJobCounts('active', 'waiting'),
      h.toolsQueue.getJobCounts('active', 'waiting', 'delayed'),
    ]).catch(() => undefined);
    const busy = counts ? Object.values({ ...counts[0] }).reduce((a, b) => a + b, 0) : 1;
    const toolsBusy = counts ? Object.values({ ...counts[1] }).reduce((a, b) => a + b, 0) : 1;
    const n = h.sim.requests.length + h.progress();
    if (n !== lastRequests) {
      lastRequests = n;
      stableSince = Date.now();
    }
    if ((nonFinal > 0 || (busy === 0 && toolsBusy === 0)) && Date.now() - stableSince >= 1500) return;
    await sleep(250);
  }
}

/** Checks every invariant on the runs' records (and the archive's, when on) and gathers the figures. */
async function judge(
  h: Harness,
  runIds: readonly string[],
  faultAt: number,
  figures: Record<string, string | number>,
): Promise<{ violations: Violation[]; statuses: Record<string, number>; calls: CallOutcomes }> {
  const { conn, keys, sim } = h;
  const starts = await readStarts(conn, keys, h.startsFile);
  const checked = await checkRuns({
    redis: conn,
    keys,
    runIds,
    requests: sim.requests,
    starts,
    runsQueue: h.runsQueue,
  });
  const violations = [...checked.violations];
  const executions = [...starts.values()];
  figures['tool calls started'] = executions.length;
  figures['tool calls started more than once'] = executions.filter((n) => n > 1).length;
  figures['model requests'] = sim.requests.length;
  figures['model turns asked more than once'] = turnsAskedTwice(sim.requests);
  figures['MCP tool calls the model saw answered ok'] = mcpCallsAnsweredOk(sim.requests);
  const epochs = await epochsOf(conn, keys.runMeta, runIds);
  if (epochs.some((e) => e !== undefined))
    figures['runs claimed by a scheduler more than once (meta epoch > 1)'] = epochs.filter(
      (e) => (e ?? 0) > 1,
    ).length;
  figures['model requests answered 200'] = sim.requests.filter((r) => r.status === 200).length;
  figures['process crashes (restarted)'] = h.fleet.crashes.length;
  for (const [outcome, n] of Object.entries(checked.outcomes)) figures[`runs ended ${outcome}`] = n;
  Object.assign(
    figures,
    stallReport(stallFigures({ faultAt, startsFile: h.startsFile, requests: sim.requests })),
  );
  const calls = await checkCallOutcomes({ redis: conn, keys, runIds, effectsDir: h.effectsDir });
  figures['calls answered timeout with 0 attempts'] = calls.timeoutsWithoutAttempt.length;
  figures['calls of succeeded runs without their effect file'] = calls.withoutEffect.length;
  if (calls.withoutEffect.length > 0)
    figures['  those calls by tool and recorded answer'] = Object.entries(calls.withoutEffectByAnswer)
      .map(([answer, n]) => `${answer}: ${n}`)
      .join(', ');
  if (h.archive) {
    figures['wait for the archive ms'] = await waitArchived(h.archive, conn, keys, runIds, 60_000);
    violations.push(...(await checkArchive({ archive: h.archive, redis: conn, keys, runIds })));
    const left = await conn.zcard(outboxKey(keys));
    const dead = await conn.hkeys(deadLetterKey(keys));
    figures['outbox entries left'] = left;
    figures['runs dead-lettered'] = dead.length;
    if (left > 0)
      violations.push({
        invariant: 'archive_entry_left',
        subject: 'outbox',
        detail: `${left} entries left after every run ended and was archived`,
      });
    for (const runId of dead)
      violations.push({ invariant: 'archive_entry_left', subject: runId, detail: 'dead-lettered' });
  }
  for (const c of h.fleet.crashes.toReversed())
    violations.unshift({
      invariant: 'process_crashed',
      subject: c.name,
      detail: `exited with code ${c.code}: ${c.error}`,
    });
  return { violations, statuses: checked.statuses, calls };
}

/**
 * Runs one scenario end to end: llm-sim, 2 schedulers and 2 executors (and an archiver, with the archive
 * on) as child processes, `runs` runs submitted through RunControl, the fault injected once the workload
 * is under way, a bounded wait for every run to end, then the invariants checked on the records.
 */
export async function runFaultScenario(
  scenario: FaultScenario,
  options: FaultRunOptions,
): Promise<FaultReport> {
  return prepareFaultScenario(scenario, options).run();
}

/** A scenario whose harness (Redis, llm-sim, fleet) is starting or started, not yet run. */
export interface PreparedFaultScenario {
  readonly scenario: FaultScenario;
  /** Resolves once the harness is ready (never rejects: `run` reports a failed start). */
  readonly started: Promise<void>;
  /**
   * Runs the scenario on the prepared harness (once) and then releases the harness in the background:
   * `cleanupAll` waits for that.
   */
  run(): Promise<FaultReport>;
}

/**
 * Starts a scenario's harness now and runs the scenario later (`run`): a suite of scenarios can start
 * the next scenario's fleet while one runs, the fleet start (seconds of processes loading) overlapping
 * the scenario's waits. Each harness has its own Redis (or key prefix on a cluster), llm-sim and fleet,
 * so that one started ahead shares nothing with the scenario running; its idle time is not part of the
 * scenario. Never run, it is released by `cleanupAll`.
 */
export function prepareFaultScenario(
  scenario: FaultScenario,
  options: FaultRunOptions,
): PreparedFaultScenario {
  const startAt = Date.now();
  let startMs = 0;
  const harness = startHarness(scenario, options).then((h) => {
    startMs = Date.now() - startAt;
    return h;
  });
  const started = harness.then(
    () => undefined,
    () => undefined,
  );
  let ran = false;
  return {
    scenario,
    started,
    run() {
      if (ran) throw new Error(`the prepared scenario ${scenario.id} was run already`);
      ran = true;
      return runOnHarness(scenario, options, harness, () => startMs);
    },
  };
}

/**
 * Scenarios run one after the other, each one's harness started ahead: `run(i)` runs the i-th (starting
 * its harness unless `prepare(i)` did) and, once that harness is up, starts the next one's, so that it is
 * ready (or nearly) when the i-th is over. Run them in their order.
 */
export function faultScenarioChain(
  entries: ReadonlyArray<{ scenario: FaultScenario; options: FaultRunOptions }>,
): { prepare(i: number): void; run(i: number): Promise<FaultReport> } {
  const prepared = new Map<number, PreparedFaultScenario>();
  const prepare = (i: number) => {
    const entry = entries[i];
    if (entry && !prepared.has(i)) prepared.set(i, prepareFaultScenario(entry.scenario, entry.options));
    return prepared.get(i);
  };
  return {
    prepare,
    async run(i) {
      const mine = prepare(i);
      if (!mine) throw new Error(`no scenario ${i} in the chain (of ${entries.length})`);
      void mine.started.then(() => prepare(i + 1));
      return mine.run();
    },
  };
}

async function runOnHarness(
  scenario: FaultScenario,
  options: FaultRunOptions,
  harness: Promise<Harness>,
  startMs: () => number,
): Promise<FaultReport> {
  // Long enough for a run whose checkpoints kept failing to come back through the run job's backoff
  // (10 s at most between attempts, and longer for run jobs queued with BullMQ's exponential one): a
  // slow recovery is not a lost run.
  const settleMs = options.settleMs ?? 130_000;
  const quietMs = options.quietMs ?? 20_000;
  const figures: Record<string, string | number> = {};
  const extra: Violation[] = [];
  const h = await harness;
  try {
    figures['fleet start ms'] = startMs();
    const runIds = await submitRuns(h, scenario, options.runs);
    const faultAt = await injectFault(h, scenario, options, runIds, figures, extra);
    const settleAt = Date.now();
    const nonFinal = await waitForFinal(h, runIds, settleMs, quietMs);
    figures['wait for final statuses ms'] = Date.now() - settleAt;
    const quietAt = Date.now();
    await waitForQuiet(h, nonFinal);
    figures['wait for quiet ms'] = Date.now() - quietAt;
    if (h.attachment?.check) {
      const statuses = await statusesOf(h.conn, h.keys.runMeta, runIds);
      await h.attachment.check({
        ended: runIds.filter((_, i) => FINAL_STATUSES.includes(statuses[i] ?? '')),
        note: (name, value) => (figures[name] = value),
        violation: (invariant, subject, detail) => extra.push({ invariant, subject, detail }),
      });
    }
    const judged = await judge(h, runIds, faultAt, figures);
    const violations = [...judged.violations, ...extra];
    return {
      scenario: scenario.id,
      title: scenario.title,
      runs: runIds.length,
      statuses: judged.statuses,
      violations,
      counts: countViolations(violations),
      runsViolating: countViolatingRuns(violations),
      figures,
      calls: judged.calls,
    };
  } finally {
    // Its teardown (processes killed, Redis, llm-sim and files removed) goes on while the next scenario
    // runs.
    void h.release().catch(() => undefined);
  }
}

/** Model turns (run and turn) llm-sim was asked more than once. */
function turnsAskedTwice(requests: ReadonlyArray<ModelRequest & { turn?: number | null }>): number {
  const turns = new Map<string, number>();
  for (const r of requests) {
    const runId = runOfRequest(r.body);
    if (runId === undefined || r.turn === null || r.turn === undefined) continue;
    const key = `${runId}#${r.turn}`;
    turns.set(key, (turns.get(key) ?? 0) + 1);
  }
  return [...turns.values()].filter((n) => n > 1).length;
}

async function statusesOf(
  redis: RedisClient,
  metaKey: (runId: string) => string,
  runIds: readonly string[],
): Promise<Array<string | null>> {
  // One command per run, sent together: on a cluster the runs are on different slots.
  return Promise.all(runIds.map((id) => redis.hget(metaKey(id), 'status')));
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
