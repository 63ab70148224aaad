import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { BreakerBoard, createDemoTools, runTool, startExecutor } from '@agent-reach/executor';
import { createLlmClient, type RunState } from '@agent-reach/scheduler';
import {
  AgentRunner,
  createRunState,
  runAgent,
  RunStore,
  type AgentLoopDeps,
  type DispatchCall,
  type DispatchRun,
} from '@agent-reach/scheduler/internal';
import { Queue, Worker } from 'bullmq';
import { envInt } from '../env.js';
import {
  WIRE_VERSION,
  createKeys,
  toolJobId,
  type ToolCallJob,
  type Keys,
  type ToolResult,
  newRunId,
} from '@agent-reach/protocol';
import {
  constants,
  createLogger,
  createMetrics,
  createRedis,
  loadAgents,
  loadConfig,
  ToolRegistry,
  waitReady,
  type AgentReachConfig,
  type AgentSpec,
  type Logger,
} from '@agent-reach/shared';
// Not (yet) exported by the package; imported from its source as the benchmark brief allows.
import { deleteByPrefix } from '../redis-stats.js';
import { startFloorWorker } from '../systems.js';
import { instrumentLlm, RunProbe } from './probe.js';
import { startSimHost, type SimHost, type SimMode } from './sim-host.js';
import { AGENT, AGENTS_YAML, FINAL_ANSWER, noopTool, SCENARIO, TOOL_STEPS } from './task.js';
import { recordingCheckpoint } from '../../test/helpers/ledger.js';
import { floorCheckpoints } from './checkpoint-floor.js';

/**
 * The configurations compared: the same loop with tools in-process, with each call a bare BullMQ job (the
 * floor under any design that keeps one BullMQ job per call), with each call the least the platform's
 * design pays (the job, a check-and-start and a record-and-reply round trip, the reply read back), through
 * the platform, and durable.
 */
export const CONFIGS = [
  'baseline',
  'job',
  'design',
  'platform',
  'unstreamed',
  'checkpoints',
  'wholeCheckpoints',
  'checkpointFloor',
] as const;
export type ConfigName = (typeof CONFIGS)[number];

export const CONFIG_LABELS: Record<ConfigName, string> = {
  baseline: 'in-process',
  job: 'BullMQ job',
  design: 'design floor',
  platform: 'platform',
  unstreamed: 'not streamed',
  checkpoints: 'platform+ckpt',
  wholeCheckpoints: 'ckpt (whole)',
  checkpointFloor: 'ckpt floor',
};

export interface LoopHarness {
  /** Key prefix of everything written to Redis. */
  readonly prefix: string;
  /** Keys of everything written to Redis. */
  readonly keys: Keys;
  readonly sim: SimHost;
  readonly executorConcurrency: number;
  readonly executorMode: ExecutorMode;
  /** One run of the task; resolves with its timestamps once it succeeded with the expected answer. */
  run(config: ConfigName, input: string): Promise<RunProbe>;
  /** Closes everything and deletes the prefix's keys. */
  close(): Promise<void>;
}

/**
 * llm-sim (in a child process by default) playing the 3-step scenario, the executor serving the no-op tool
 * (in this process by default), an `AgentRunner` on a key prefix of its own, a `RunStore` for the checkpointed configuration, and the
 * in-process baseline: `runAgent` with a dispatcher that calls `runTool` (the executor's own pipeline:
 * parse, validate, authorize, breaker, timeout, shaping) directly, without Redis.
 */
export async function startLoopHarness(options: {
  redisUrl: string;
  tmpDir: string;
  simMode: SimMode;
  executorMode: ExecutorMode;
  /** Simulated latency of every model answer, in ms. */
  llmLatencyMs: number;
}): Promise<LoopHarness> {
  const { redisUrl, tmpDir } = options;
  const prefix = `bench-loop-${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const logger = createLogger('bench', { level: 'silent' });
  const agentsFile = path.join(tmpDir, 'agents.yaml');
  await writeFile(agentsFile, AGENTS_YAML);
  const config = loadConfig({
    REDIS_URL: redisUrl,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: agentsFile,
    EXECUTOR_METRICS_PORT: '0',
    OUTPUTS_DIR: path.join(tmpDir, 'outputs'),
  });
  const closers: Array<() => Promise<void>> = [];
  const producer: Redis = createRedis(redisUrl, 'producer');
  closers.push(async () => {
    await deleteByPrefix(producer, prefix);
    await producer.quit();
  });
  try {
    await waitReady(producer, redisUrl);
    const sim = await startSimHost(options.simMode, options.llmLatencyMs);
    closers.push(() => sim.close());
    closers.push(await startToolExecutor(options.executorMode, config, agentsFile, logger));
    // The baseline's own registry: the same tools the executor serves, run in this process.
    const registry = new ToolRegistry().register(
      ...createDemoTools({ redis: producer, keys, outputsDir: config.outputsDir }),
      noopTool,
    );
    const agents = loadAgents(agentsFile, registry.names());
    const probes = new Map<string, RunProbe>();
    const llmOf = (stream: boolean) =>
      instrumentLlm(
        createLlmClient({ apiKey: 'x', baseURL: sim.url, model: SCENARIO, maxRetries: 0, stream }),
        probes,
      );
    // Streamed turns are the scheduler's default; 0 measures the non-streamed path everywhere.
    const llm = llmOf(envInt('BENCH_LOOP_LLM_STREAM', 1, 0) === 1);
    // The platform path with turns not streamed: what streaming costs per step is platform against it.
    const unstreamed = llmOf(false);
    const runner = await AgentRunner.start({ connection: producer, keys, agents, llm, logger });
    closers.push(() => runner.close());
    const store = new RunStore(producer, keys);
    // Checkpoints as records were written before deltas (the whole state each time), measured beside them.
    const wholeStore = new RunStore(producer, keys, { stateFormat: 'whole' });
    const floorClaim = floorCheckpoints(producer, keys);
    const agent = agents.agents.get(AGENT) as AgentSpec;

    const board = new BreakerBoard(
      { failureThreshold: config.executor.breakerFailureThreshold, resetTimeoutMs: 60_000 },
      {
        redis: producer,
        keys,
        executorId: 'bench-in-process',
        logger,
        metrics: createMetrics(new Registry()),
      },
    );
    closers.push(async () => board.shutdown());
    const inProcess: AgentLoopDeps['dispatcher'] = {
      async dispatch(run, calls) {
        const now = Date.now();
        return Promise.all(
          calls.map(async (call) => {
            const deadline =
              now + runner.catalog.worstCaseMs(call.name) + constants.DEFAULT_DISPATCH_SLACK_MS;
            const job = toolCallJob(run, call, now, deadline);
            const { result } = await runTool(job, {
              registry,
              agents,
              breakers: board,
              logger,
            });
            return result;
          }),
        );
      },
    };
    const jobs = await startJobDispatcher(redisUrl, `${prefix}-job`, config.executor.concurrency, (job) =>
      inProcess.dispatch({ runId: job.run_id, traceId: job.trace_id, agent: job.agent }, [
        { toolCallId: job.tool_call_id, name: job.name, arguments: job.arguments },
      ]),
    );
    closers.push(() => jobs.close());
    const floor = await startDesignDispatcher(
      redisUrl,
      `${prefix}-design`,
      config.executor.concurrency,
      (job) =>
        inProcess.dispatch({ runId: job.run_id, traceId: job.trace_id, agent: job.agent }, [
          { toolCallId: job.tool_call_id, name: job.name, arguments: job.arguments },
        ]),
    );
    closers.push(() => floor.close());
    const noneOpen = { openTools: async () => new Set<string>() };

    const check = (probe: RunProbe, outcome: unknown, state: RunState) => {
      const status = typeof outcome === 'object' ? (outcome as { status?: string }).status : outcome;
      const ok = state.steps.filter((s) => s.ok).length;
      if (status !== 'succeeded' || state.outcome?.answer !== FINAL_ANSWER || ok !== TOOL_STEPS) {
        throw new Error(
          `run "${probe.input}" ended ${String(status)} with ${ok}/${state.steps.length} ok steps: ` +
            JSON.stringify(state.outcome),
        );
      }
    };

    return {
      prefix,
      keys,
      sim,
      executorConcurrency: config.executor.concurrency,
      executorMode: options.executorMode,
      async run(name, input) {
        const probe = new RunProbe(input);
        probes.set(input, probe);
        try {
          if (name === 'baseline' || name === 'job' || name === 'design') {
            const state = createRunState({
              runId: newRunId(),
              agent: AGENT,
              input,
              deadlineMs: constants.DEFAULT_RUN_DEADLINE_MS,
            });
            const outcome = await runAgent(state, {
              llm,
              dispatcher: name === 'job' ? jobs.dispatcher : name === 'design' ? floor.dispatcher : inProcess,
              catalog: runner.catalog,
              breakers: noneOpen,
              agent,
              logger,
              onEvent: probe.onEvent,
            });
            check(probe, outcome, state);
          } else {
            const state = runner.newState({ agent: AGENT, input });
            probe.runId = state.runId;
            // As the run worker does: claim the run, then write each step through its checkpointer.
            const ckptStore =
              name === 'checkpoints' ? store : name === 'wholeCheckpoints' ? wholeStore : undefined;
            const writer = ckptStore ? (await ckptStore.claim(state.runId)).writer : undefined;
            // The least a checkpoint can be (checkpoint-floor.ts), written as the store's are.
            const floorWrite = name === 'checkpointFloor' ? await floorClaim(state.runId) : undefined;
            // Without checkpoints the run still records itself and its calls (executors verify every
            // call against that record), as little as that takes: the run's status and its ledger.
            const ledgerOnly = recordingCheckpoint(runner.connection, runner.keys);
            const outcome = await runner.resume(state, {
              ...(name === 'unstreamed' ? { llm: unstreamed } : {}),
              onEvent: probe.onEvent,
              checkpoint: writer
                ? (s, events) => {
                    const send = writer.prepare(s, events);
                    return async () => {
                      await send();
                    };
                  }
                : (floorWrite ?? ((s) => ledgerOnly(s))),
              // As the run worker does: the store and the dispatcher share the producer connection.
              orderedCheckpoints: writer || floorWrite ? store.connection === runner.connection : true,
            });
            check(probe, outcome, state);
          }
        } finally {
          probes.delete(input);
        }
        return probe;
      },
      close: () => closeAll(closers),
    };
  } catch (err) {
    await closeAll(closers);
    throw err;
  }
}

/** The job of one call, as the dispatcher publishes it (no reply list: nothing here replies through Redis). */
function toolCallJob(run: DispatchRun, call: DispatchCall, now: number, deadline: number): ToolCallJob {
  return {
    v: WIRE_VERSION,
    run_id: run.runId,
    trace_id: run.traceId,
    agent: run.agent,
    tool_call_id: call.toolCallId,
    name: call.name,
    arguments: call.arguments,
    deadline,
    reply_to: '',
    enqueued_at: now,
  };
}

/**
 * Each call a bare BullMQ job: `Queue.add` on a queue of its own, a `Worker` in this process running the
 * call as the in-process configuration does, the caller told by the worker's `completed` event (no Redis
 * round trip of its own). Nothing recorded, verified or replied through Redis.
 */
async function startJobDispatcher(
  redisUrl: string,
  prefix: string,
  concurrency: number,
  run: (job: ToolCallJob) => Promise<ToolResult[]>,
): Promise<{ dispatcher: AgentLoopDeps['dispatcher']; close(): Promise<void> }> {
  const queueName = createKeys(prefix).toolQueue(constants.DEFAULT_TOOL_GROUP);
  const conns = [createRedis(redisUrl, 'worker'), createRedis(redisUrl, 'worker')] as const;
  const queue = new Queue<ToolCallJob, ToolResult>(queueName, { connection: conns[0], prefix });
  const worker = new Worker<ToolCallJob, ToolResult>(
    queueName,
    async (job) => {
      const [result] = await run(job.data);
      if (!result) throw new Error(`no result for ${job.data.tool_call_id}`);
      return result;
    },
    { connection: conns[1], prefix, concurrency },
  );
  const pending = new Map<string, (result: ToolResult) => void>();
  worker.on('completed', (job, result) => {
    if (job.id) pending.get(job.id)?.(result);
  });
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  return {
    dispatcher: awaitedDispatcher(queue, pending),
    async close() {
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await Promise.all(conns.map((c) => c.quit().catch(() => undefined)));
    },
  };
}

/**
 * Each call what the platform's design cannot do without (bench/systems.ts `startDesignFloor`): the caller
 * writes the call into its run's ledger and adds its job; the worker checks the call against the ledger and
 * records its start (one script), runs it as the in-process configuration does, records the result and
 * pushes it onto the caller's reply list (one script); the caller reads its list with a blocking BLMPOP.
 * No TTLs, no validation of the job beyond the ledger, no breaker or metrics of the platform's own.
 */
async function startDesignDispatcher(
  redisUrl: string,
  prefix: string,
  concurrency: number,
  run: (job: ToolCallJob) => Promise<ToolResult[]>,
): Promise<{ dispatcher: AgentLoopDeps['dispatcher']; close(): Promise<void> }> {
  const keys = createKeys(prefix);
  const queueName = keys.toolQueue(constants.DEFAULT_TOOL_GROUP);
  const conns = [
    createRedis(redisUrl, 'producer'),
    createRedis(redisUrl, 'worker'),
    createRedis(redisUrl, 'worker'),
    createRedis(redisUrl, 'worker'),
  ] as const;
  const [producer, workerConn, writer, reader] = conns;
  const queue = new Queue<ToolCallJob, void>(queueName, { connection: producer, prefix });
  const pending = new Map<string, (result: ToolResult) => void>();
  const floor = startFloorWorker({
    queueName,
    prefix,
    keys,
    concurrency,
    workerConn,
    writer,
    reader,
    replyTo: keys.replies(randomUUID()),
    pending,
    run: async (job) => {
      const [result] = await run(job.data);
      if (!result) throw new Error(`no result for ${job.data.tool_call_id}`);
      return result;
    },
  });
  await Promise.all([queue.waitUntilReady(), floor.worker.waitUntilReady()]);
  return {
    dispatcher: awaitedDispatcher(queue, pending, (runId, toolCallId) => {
      producer.hset(keys.runCalls(runId), toolCallId, '1').catch(() => undefined);
    }),
    async close() {
      await floor.stopReading();
      await floor.worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await deleteByPrefix(producer, prefix).catch(() => undefined);
      await Promise.all(conns.map((c) => c.quit().catch(() => undefined)));
    },
  };
}

/**
 * A dispatcher that adds one job per call and awaits its result by job id in `pending` (filled by whatever
 * sees completions); `beforeAdd` runs, not awaited, before each add.
 */
function awaitedDispatcher(
  queue: Queue<ToolCallJob, unknown>,
  pending: Map<string, (result: ToolResult) => void>,
  beforeAdd?: (runId: string, toolCallId: string) => void,
): AgentLoopDeps['dispatcher'] {
  return {
    async dispatch(run, calls) {
      const now = Date.now();
      return Promise.all(
        calls.map(async (call) => {
          const jobId = toolJobId(run.runId, call.toolCallId);
          const done = new Promise<ToolResult>((resolve) => pending.set(jobId, resolve));
          beforeAdd?.(run.runId, call.toolCallId);
          await queue.add(call.name, toolCallJob(run, call, now, now + 30_000), {
            jobId,
            removeOnComplete: true,
          });
          const result = await done;
          pending.delete(jobId);
          return result;
        }),
      );
    },
  };
}

export type ExecutorMode = 'inline' | 'process';

/**
 * Starts the executor serving the no-op tool: `startExecutor` in this process (as bench/systems.ts does),
 * or the executor's own `main.ts` in a child process, as it is deployed. Returns its closer.
 */
async function startToolExecutor(
  mode: ExecutorMode,
  config: AgentReachConfig,
  agentsFile: string,
  logger: Logger,
): Promise<() => Promise<void>> {
  if (mode === 'inline') {
    const executor = await startExecutor(config, { extraTools: [noopTool], logger });
    return () => executor.close();
  }
  // fork() passes this process's execArgv on, so the child loads TypeScript through tsx as this one did.
  const child = fork(fileURLToPath(new URL('../../packages/executor/src/main.ts', import.meta.url)), {
    env: {
      ...process.env,
      REDIS_URL: config.redisUrl,
      AR_KEY_PREFIX: config.keyPrefix,
      AGENTS_FILE: agentsFile,
      OUTPUTS_DIR: config.outputsDir,
      EXECUTOR_METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      TOOL_MODULES: fileURLToPath(new URL('./tool-module.ts', import.meta.url)),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await Promise.race([
    new Promise<void>((resolve) => child.once('message', () => resolve())),
    exited.then(() => Promise.reject(new Error(`the executor process exited (${child.exitCode})`))),
  ]);
  return async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
}

async function closeAll(closers: Array<() => Promise<void>>): Promise<void> {
  for (const close of closers.reverse()) await close().catch(() => undefined);
}

/** The keys of a run's record, by the name the benchmark reports them under. */
function recordKeys(keys: Keys, id: string): Array<[name: string, key: string]> {
  return [
    ['state', keys.runState(id)],
    ['messages', keys.runMessages(id)],
    ['events', keys.runEvents(id)],
    ['listing', keys.runMeta(id)],
    ['approvals', keys.runApprovals(id)],
    ['ledger', keys.runCalls(id)],
    ['starts', keys.runStarts(id)],
    ['results', keys.results(id)],
  ];
}

/**
 * Bytes Redis holds for each finished run (MEMORY USAGE of every key of the run's record), in order, and
 * by key: each key's bytes for every run, and its encoding in the last run (absent: no such key).
 */
export async function runRecordBytes(
  redis: Redis,
  keys: Keys,
  runIds: string[],
): Promise<{ perRun: number[]; byKey: Map<string, number[]>; encodings: Map<string, string> }> {
  const pipe = redis.pipeline();
  for (const id of runIds)
    for (const [, key] of recordKeys(keys, id)) pipe.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
  const last = runIds.at(-1);
  const lastKeys = last === undefined ? [] : recordKeys(keys, last);
  for (const [, key] of lastKeys) pipe.call('OBJECT', 'ENCODING', key);
  const replies = (await pipe.exec()) ?? [];
  // A key the run does not have answers OBJECT ENCODING with an error (no such key): no encoding.
  const encodings = new Map(
    lastKeys.flatMap(([name], j) => {
      const [err, encoding] = replies[runIds.length * lastKeys.length + j] ?? [];
      return err || typeof encoding !== 'string' ? [] : [[name, encoding] as const];
    }),
  );
  const names = recordKeys(keys, 'x').map(([name]) => name);
  const byKey = new Map(names.map((name) => [name, [] as number[]]));
  const perRun = runIds.map((_, i) =>
    names.reduce((sum, name, j) => {
      const bytes = Number(replies[i * names.length + j]?.[1]) || 0;
      byKey.get(name)?.push(bytes);
      return sum + bytes;
    }, 0),
  );
  return { perRun, byKey, encodings };
}
