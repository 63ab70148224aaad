import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { context, type Context } from '@opentelemetry/api';
import { startExecutor } from '@agent-reach/executor';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import {
  WIRE_VERSION,
  createKeys,
  defineTool,
  toolJobId,
  Type,
  type ToolCallJob,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  callLedgerEntry,
  constants,
  createLogger,
  createRedis,
  loadConfig,
  runTraceContext,
  waitReady,
} from '@agent-reach/shared';
import { deleteByPrefix } from './redis-stats.js';

/** One system under test: a way to make one tool call end to end, and to take itself down. */
export interface BenchSystem {
  readonly label: string;
  /** Key prefix of everything it wrote to Redis. */
  readonly prefix: string;
  /** One call with a fresh id; rejects unless the result is an ok echo of the payload. */
  call(): Promise<void>;
  /** Closes its clients and deletes its Redis keys. */
  close(): Promise<void>;
}

export interface SystemOptions {
  redisUrl: string;
  /** The string argument the no-op tool echoes back. */
  payload: string;
  concurrency: number;
}

const TOOL = 'bench_noop';
const AGENT = 'bench_agent';
/** A run of an agent makes a handful of calls; ids roll over to a new run after this many. */
const CALLS_PER_RUN = 20;
const JOB_OPTS = {
  attempts: constants.TOOL_JOB_ATTEMPTS,
  backoff: { type: 'fixed', delay: 1000 },
  removeOnFail: { age: constants.TOOL_JOB_KEEP_FAILED_S },
} as const;

function shortId(): string {
  return randomUUID().slice(0, 8);
}

function ids(seq: number, runBase: string): { runId: string; toolCallId: string } {
  return { runId: `${runBase}-${Math.floor(seq / CALLS_PER_RUN)}`, toolCallId: `call_${seq}` };
}

/** A tool-call job as the dispatcher builds it, for the baselines. */
function jobData(runId: string, toolCallId: string, args: string, replyTo: string): ToolCallJob {
  const now = Date.now();
  return {
    v: WIRE_VERSION,
    run_id: runId,
    trace_id: runId,
    agent: AGENT,
    tool_call_id: toolCallId,
    name: TOOL,
    arguments: args,
    deadline: now + 30_000,
    reply_to: replyTo,
    enqueued_at: now,
  };
}

/** The baselines' processor: a result of the platform's shape and size, echoing the payload. */
async function echoJob(job: Job<ToolCallJob>): Promise<ToolResult> {
  return {
    tool_call_id: job.data.tool_call_id,
    name: job.data.name,
    ok: true,
    status: 'ok',
    content: { echo: (JSON.parse(job.data.arguments) as { payload: string }).payload },
    duration_ms: 0,
    attempts: 1,
  };
}

/**
 * The `call` and `close` of a system whose results reach `pending` by job id (the baselines that see or
 * read completions themselves): each call adds a fresh job (after `beforeAdd`, not awaited) and checks
 * that the result echoes the payload; closing stops `beforeClose` and the worker, then empties the queue
 * and its keys and quits the connections.
 */
function awaitedJobs(o: {
  label: string;
  prefix: string;
  payload: string;
  replyTo: string;
  queue: Queue<ToolCallJob>;
  worker: Worker<ToolCallJob>;
  pending: Map<string, (result: ToolResult) => void>;
  conns: readonly Redis[];
  beforeAdd?: (runId: string, toolCallId: string) => void;
  beforeClose?: () => Promise<void>;
}): BenchSystem {
  const [queueConn] = o.conns;
  const args = JSON.stringify({ payload: o.payload });
  const runBase = `run-${shortId()}`;
  let seq = 0;
  return {
    label: o.label,
    prefix: o.prefix,
    async call() {
      const { runId, toolCallId } = ids(seq++, runBase);
      const jobId = toolJobId(runId, toolCallId);
      const done = new Promise<ToolResult>((resolve) => o.pending.set(jobId, resolve));
      o.beforeAdd?.(runId, toolCallId);
      await o.queue.add(TOOL, jobData(runId, toolCallId, args, o.replyTo), {
        ...JOB_OPTS,
        jobId,
        removeOnComplete: true,
      });
      const result = await done;
      o.pending.delete(jobId);
      if (!result.ok || (result.content as { echo?: string }).echo !== o.payload) {
        throw new Error(`${o.label} call ${toolCallId} returned ${JSON.stringify(result)}`);
      }
    },
    async close() {
      await o.beforeClose?.();
      await o.worker.close();
      await o.queue.obliterate({ force: true });
      await o.queue.close();
      if (queueConn) await deleteByPrefix(queueConn, o.prefix);
      await Promise.all(o.conns.map((c) => c.quit().catch(() => undefined)));
    },
  };
}

/**
 * BullMQ as one would use it directly: `Queue.add`, a `Worker` whose processor returns a result of the
 * platform's shape and size, and `job.waitUntilFinished(queueEvents)`. Job data and options mirror the
 * dispatcher's, except that completed jobs are kept (`count: 1000`): `waitUntilFinished` checks the job
 * once after subscribing and reports a job already removed as failed.
 */
export async function startRawBullmq(options: SystemOptions): Promise<BenchSystem> {
  const { redisUrl, payload } = options;
  const prefix = `bench-raw-${shortId()}`;
  const queueName = createKeys(prefix).toolQueue(constants.DEFAULT_TOOL_GROUP);
  const connect = () => new Redis(redisUrl, { maxRetriesPerRequest: null });
  const conns = [connect(), connect(), connect()] as const;
  const [queueConn, workerConn, eventsConn] = conns;
  const queue = new Queue<ToolCallJob, ToolResult>(queueName, { connection: queueConn, prefix });
  const worker = new Worker<ToolCallJob, ToolResult>(queueName, echoJob, {
    connection: workerConn,
    prefix,
    concurrency: options.concurrency,
  });
  const events = new QueueEvents(queueName, { connection: eventsConn, prefix });
  // waitUntilFinished adds a 'closing' listener to the queue per waiting call.
  queue.setMaxListeners(0);
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady(), events.waitUntilReady()]);
  const args = JSON.stringify({ payload });
  const runBase = `run-${shortId()}`;
  const replyTo = createKeys(prefix).replies(randomUUID());
  let seq = 0;
  return {
    label: 'raw BullMQ',
    prefix,
    async call() {
      const { runId, toolCallId } = ids(seq++, runBase);
      const job = await queue.add(TOOL, jobData(runId, toolCallId, args, replyTo), {
        ...JOB_OPTS,
        jobId: toolJobId(runId, toolCallId),
        removeOnComplete: { count: 1000 },
      });
      const result = (await job.waitUntilFinished(events, 30_000)) as ToolResult;
      if (!result.ok || (result.content as { echo?: string }).echo !== payload) {
        throw new Error(`raw BullMQ call ${toolCallId} returned ${JSON.stringify(result)}`);
      }
    },
    async close() {
      await worker.close();
      await queue.obliterate({ force: true });
      await Promise.all([queue.close(), events.close()]);
      await deleteByPrefix(queueConn, prefix);
      await Promise.all(conns.map((c) => c.quit().catch(() => undefined)));
    },
  };
}

/**
 * The least any design pays that keeps one BullMQ job per call: `Queue.add`, a `Worker` that takes the job
 * and completes it (removed on completion, as the dispatcher's jobs are), and the caller told in this
 * process by the worker's `completed` event, with no Redis round trip of its own. Nothing is verified,
 * recorded or replied: it is the job's own Redis work, the floor under the platform's.
 */
export async function startJobFloor(options: SystemOptions): Promise<BenchSystem> {
  const { redisUrl, payload } = options;
  const prefix = `bench-job-${shortId()}`;
  const queueName = createKeys(prefix).toolQueue(constants.DEFAULT_TOOL_GROUP);
  const connect = () => new Redis(redisUrl, { maxRetriesPerRequest: null });
  const conns = [connect(), connect()] as const;
  const [queueConn, workerConn] = conns;
  const queue = new Queue<ToolCallJob, ToolResult>(queueName, { connection: queueConn, prefix });
  const worker = new Worker<ToolCallJob, ToolResult>(queueName, echoJob, {
    connection: workerConn,
    prefix,
    concurrency: options.concurrency,
  });
  const pending = new Map<string, (result: ToolResult) => void>();
  worker.on('completed', (job, result) => {
    if (job.id) pending.get(job.id)?.(result);
  });
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  const replyTo = createKeys(prefix).replies(randomUUID());
  return awaitedJobs({ label: 'BullMQ job', prefix, payload, replyTo, queue, worker, pending, conns });
}

/** The design floor's check: the call is in its run's ledger; its start is recorded. */
const FLOOR_CHECK_LUA = `
if not redis.call('HGET', KEYS[1], ARGV[1]) then return 0 end
redis.call('HSETNX', KEYS[1], ARGV[1] .. ':start', ARGV[2])
return 1`;
/** The design floor's outcome: the result recorded (first one wins), then pushed to the caller's list. */
const FLOOR_RECORD_REPLY_LUA = `
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1`;

/**
 * The worker side of the design floor and the caller's reading of its replies: a `Worker` that checks each
 * call against its run's ledger and records its start (`FLOOR_CHECK_LUA`), runs it with `run`, records the
 * result and pushes it onto `replyTo` (`FLOOR_RECORD_REPLY_LUA`); and a loop reading `replyTo` with a
 * blocking `BLMPOP` that hands each reply to its call's entry in `pending`, by job id.
 */
export function startFloorWorker(o: {
  queueName: string;
  prefix: string;
  keys: ReturnType<typeof createKeys>;
  concurrency: number;
  workerConn: Redis;
  writer: Redis;
  reader: Redis;
  replyTo: string;
  pending: Map<string, (result: ToolResult) => void>;
  run: (job: Job<ToolCallJob>) => Promise<ToolResult>;
}): { worker: Worker<ToolCallJob, void>; stopReading(): Promise<void> } {
  const { keys, writer, reader, replyTo, pending } = o;
  writer.defineCommand('floorCheck', { numberOfKeys: 1, lua: FLOOR_CHECK_LUA });
  writer.defineCommand('floorRecordReply', { numberOfKeys: 2, lua: FLOOR_RECORD_REPLY_LUA });
  const scripts = writer as unknown as {
    floorCheck(ledger: string, id: string, start: string): Promise<number>;
    floorRecordReply(results: string, replies: string, id: string, json: string): Promise<number>;
  };
  const worker = new Worker<ToolCallJob, void>(
    o.queueName,
    async (job) => {
      const d = job.data;
      if ((await scripts.floorCheck(keys.runCalls(d.run_id), d.tool_call_id, 's')) !== 1) {
        throw new Error(`call ${d.tool_call_id} is not in its run's ledger`);
      }
      const result = await o.run(job);
      const json = JSON.stringify({ run_id: d.run_id, result });
      await scripts.floorRecordReply(keys.results(d.run_id), replyTo, d.tool_call_id, json);
    },
    { connection: o.workerConn, prefix: o.prefix, concurrency: o.concurrency },
  );
  let open = true;
  const reading = (async () => {
    while (open) {
      const batch = (await reader.blmpop(1, 1, replyTo, 'RIGHT', 'COUNT', 100).catch(() => null)) as
        [string, string[]] | null;
      for (const raw of batch?.[1] ?? []) {
        const reply = JSON.parse(raw) as { run_id: string; result: ToolResult };
        pending.get(toolJobId(reply.run_id, reply.result.tool_call_id))?.(reply.result);
      }
    }
  })();
  return {
    worker,
    async stopReading() {
      open = false;
      reader.disconnect();
      await reading;
    },
  };
}

/**
 * The least the platform's design pays for a call: the bare BullMQ job (`startJobFloor`), plus what no
 * executor of this design can leave out — one round trip that checks the call against its run's ledger and
 * records its start before anything runs (a script: one `HGET`, one `HSETNX`), one that records the result
 * and pushes it onto the caller's reply list (a script: `HSETNX`, `LPUSH`), the caller's blocking read of
 * that list (`BLMPOP`), and the caller's write of the call into the ledger, as the platform's benchmark
 * writes it. Plain ioredis connections, as the other baselines; no TTLs, no validation, no breaker, no
 * metrics: a floor, not a product.
 */
export async function startDesignFloor(options: SystemOptions): Promise<BenchSystem> {
  const { redisUrl, payload } = options;
  const prefix = `bench-design-${shortId()}`;
  const keys = createKeys(prefix);
  const queueName = keys.toolQueue(constants.DEFAULT_TOOL_GROUP);
  const connect = () => new Redis(redisUrl, { maxRetriesPerRequest: null });
  const conns = [connect(), connect(), connect(), connect()] as const;
  const [queueConn, workerConn, writer, reader] = conns;
  const replyTo = keys.replies(randomUUID());
  const queue = new Queue<ToolCallJob, void>(queueName, { connection: queueConn, prefix });
  const pending = new Map<string, (result: ToolResult) => void>();
  const floor = startFloorWorker({
    queueName,
    prefix,
    keys,
    concurrency: options.concurrency,
    workerConn,
    writer,
    reader,
    replyTo,
    pending,
    run: echoJob,
  });
  const { worker } = floor;
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  return awaitedJobs({
    label: 'design',
    prefix,
    payload,
    replyTo,
    queue,
    worker,
    pending,
    conns,
    beforeAdd: (runId, toolCallId) => {
      queueConn.hset(keys.runCalls(runId), toolCallId, '1').catch(() => undefined);
    },
    beforeClose: () => floor.stopReading(),
  });
}

/** The MCP server of `startPlatform({ mcp: true })`: the same no-op tool, served over stdio. */
const MCP_SERVER = fileURLToPath(new URL('./mcp-echo-server.mjs', import.meta.url));
/** Its tool as the platform names it: `<server>__<tool>`. */
const MCP_TOOL = `bench__${TOOL}`;

/**
 * The platform end to end for a no-op tool: `Dispatcher.dispatch` → tool queue → `startExecutor`'s worker
 * (verify against the run record, validate, authorize, breaker, timeout, shaping, record + reply) → reply
 * list → result. The run record the executor verifies against is written per call as the scheduler's
 * checkpoint writes it (see `call`). With `mcp`, the tool is the same no-op served by an MCP server the
 * executor starts over stdio (bench/mcp-echo-server.mjs) instead of a TypeScript tool in its process.
 */
export async function startPlatform(
  options: SystemOptions & { tmpDir: string; mcp?: boolean },
): Promise<BenchSystem> {
  const { redisUrl, payload, tmpDir } = options;
  const prefix = `bench-${options.mcp ? 'mcp' : 'ar'}-${shortId()}`;
  const keys = createKeys(prefix);
  const logger = createLogger('bench', { level: 'silent' });
  const tool = options.mcp ? MCP_TOOL : TOOL;
  const agentsFile = path.join(tmpDir, `agents-${prefix}.yaml`);
  const document = {
    agents: [{ name: AGENT, tools: [tool] }],
    ...(options.mcp
      ? {
          tool_groups: {
            default: { mcp_servers: [{ name: 'bench', command: process.execPath, args: [MCP_SERVER] }] },
          },
        }
      : {}),
  };
  // JSON is YAML.
  await writeFile(agentsFile, JSON.stringify(document));
  const config = loadConfig({
    REDIS_URL: redisUrl,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: agentsFile,
    EXECUTOR_METRICS_PORT: '0',
    EXECUTOR_CONCURRENCY: String(options.concurrency),
    OUTPUTS_DIR: path.join(tmpDir, 'outputs'),
  });
  const noopTool = defineTool({
    name: TOOL,
    description: 'Echoes its payload; does nothing else. For benchmarks.',
    parameters: Type.Object({ payload: Type.String() }, { additionalProperties: false }),
    handler: (a) => ({ echo: a.payload }),
  });
  const executor = await startExecutor(config, { extraTools: [noopTool], logger });
  const producer = createRedis(redisUrl, 'producer');
  await waitReady(producer, redisUrl);
  const catalog = new ToolCatalog(producer, keys);
  // An MCP server's tools are announced once the executor has started it and listed them.
  for (const until = Date.now() + 20_000; !(await catalog.refresh()).has(tool);) {
    if (Date.now() > until) throw new Error(`the executor did not announce ${tool} within 20 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const dispatcher = new Dispatcher({ connection: producer, keys, catalog, logger });
  const args = JSON.stringify({ payload });
  const runBase = `run-${shortId()}`;
  const runContexts = new Map<string, Context>();
  let seq = 0;
  return {
    label: options.mcp ? 'MCP stdio' : 'platform',
    prefix,
    async call() {
      const n = seq++;
      const { runId, toolCallId } = ids(n, runBase);
      // What the run's checkpoint records before the turn is published (the run, then each call in its
      // ledger), written as the checkpoint is: ahead of the publication on the same connection, not
      // awaited. The executor verifies the job against it.
      if (n % CALLS_PER_RUN === 0) {
        producer.hset(keys.runMeta(runId), { runId, agent: AGENT, status: 'running' }).catch(() => undefined);
      }
      producer
        .hset(
          keys.runCalls(runId),
          toolCallId,
          callLedgerEntry({ agent: AGENT, name: tool, arguments: args }),
        )
        .catch(() => undefined);
      // As the agent loop publishes a model turn it has just received: `fresh`, no record to consult, in
      // the run's trace (the agent runner makes it the active context once per run, as here).
      const run = { runId, traceId: runId, agent: AGENT };
      let traced = runContexts.get(runId);
      if (!traced) {
        runContexts.clear();
        traced = runTraceContext(run);
        runContexts.set(runId, traced);
      }
      const [result] = await context.with(traced, () =>
        dispatcher.dispatch(run, [{ toolCallId, name: tool, arguments: args }], { fresh: true }),
      );
      if (!result?.ok || (result.content as { echo?: string }).echo !== payload) {
        throw new Error(`platform call ${toolCallId} returned ${JSON.stringify(result)}`);
      }
    },
    async close() {
      await dispatcher.close();
      await executor.close();
      await deleteByPrefix(producer, prefix);
      await producer.quit();
    },
  };
}
