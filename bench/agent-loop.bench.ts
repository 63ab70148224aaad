/**
 * Agent-loop benchmark: end-to-end runs of a 3-tool-step task (plan, three no-op tool turns, final answer)
 * against a zero-latency llm-sim, through the platform (AgentRunner → dispatcher → tool queue → executor →
 * reply) and, as the baseline, through the same `runAgent` loop with each tool run in-process by the
 * executor's `runTool` (no Redis on the path). A third configuration runs each call as a bare BullMQ job
 * (add, a worker in this process running `runTool`, completion seen in process): the floor under any design
 * that keeps one BullMQ job per call. Another runs each call as the least the platform's design pays (the
 * job, a check-and-start and a record-and-reply script, the reply read back with BLMPOP; bench/systems.ts
 * `startDesignFloor`). Optionally one more configuration checkpoints every step to Redis with `RunStore`.
 *
 * Per round, in-flight count (1, then IN_FLIGHT) and configuration: runs/s of a closed loop and, for every
 * tool step, its platform overhead = step wall time − the simulator's handling time of the turn − the
 * tool's `duration_ms`. Configurations rotate order each round; medians of rounds are reported.
 *
 * The checkpointed configuration runs twice: with today's delta checkpoints and, as `ckpt (whole)`, with
 * the whole state at every checkpoint (the format before deltas), so both are measured in the same run.
 *
 *   pnpm bench:loop   (builds, then runs on the packages' built dist/ as shipped:
 *                      tsx --conditions=agent-reach-dist bench/agent-loop.bench.ts)
 *     BENCH_LOOP_RUNS_SEQ (default 150)   runs at 1 in flight per phase
 *     BENCH_LOOP_RUNS_LOAD (default 640)  runs at BENCH_LOOP_IN_FLIGHT (default 64) per phase
 *     BENCH_LOOP_ROUNDS (default 5), BENCH_LOOP_CHECKPOINTS (default 1; 0 leaves that configuration out),
 *     BENCH_LOOP_SIM (default process: llm-sim in a child process, like a remote model; inline: in this
 *     process, where its CPU competes with the loop's), BENCH_LOOP_EXECUTOR (default inline: startExecutor
 *     in this process, as bench/systems.ts; process: the executor's main.ts in a child process),
 *     BENCH_LOOP_LLM_LATENCY_MS (default 0: simulated latency of every model answer), BENCH_LOOP_LLM_STREAM
 *     (default 1: model turns streamed, as the scheduler asks them; 0: not streamed), REDIS_URL
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { constants } from '@agent-reach/shared';
import { benchEnvironment, closedLoop, median } from './measure.js';
import {
  fmt,
  medianFigures,
  phaseFigures,
  printTable,
  sampleRedisBytes,
  type Medians,
  type PhaseFigures,
} from './agent-loop/figures.js';
import {
  CONFIG_LABELS,
  CONFIGS,
  runRecordBytes,
  startLoopHarness,
  type ConfigName,
  type LoopHarness,
} from './agent-loop/harness.js';
import { stepsOf, type RunProbe, type StepSample } from './agent-loop/probe.js';
import { taskInput, TOOL_STEPS } from './agent-loop/task.js';
import { envInt } from './env.js';
import { formatTarget, roundRatio, target, type Target } from './targets.js';
import { checkpointTargets } from './agent-loop/checkpoint-targets.js';

const TARGET_OVERHEAD_P50_MS = 3;
const TOP_COMMANDS = 10;
/** Finished runs whose record is weighed per phase (MEMORY USAGE of each of their keys). */
const WEIGHED_RUNS = 20;

const STEP_DEFINITION =
  'tool step k (k = 1..3): from the end of the previous step (the `plan` event for k = 1, else the last ' +
  '`tool_result` event of turn k-1) to the last `tool_result` event of turn k, timed with performance.now ' +
  'in onEvent. It holds the previous step\'s checkpoint, the breaker read and prompt building ("pre"), ' +
  'the model turn, the llm_request emit and its checkpoint ("post"), and the dispatch round trip. ' +
  'Overhead = wall - simulator handling time of that turn (HTTP server diagnostics channel, ' +
  'request start to response finish, matched by x-request-id) - tool duration_ms.';

/** Streamed turns may cost at most this much more per step than turns asked whole (issue target). */
const STREAM_OVERHEAD_RATIO_TARGET = 1.1;

let runSeq = 0;

async function measurePhase(
  harness: LoopHarness,
  admin: Redis,
  config: ConfigName,
  inFlight: number,
  runs: number,
): Promise<PhaseFigures> {
  // Every run's input is unique, so the simulator plays a different conversation each time.
  const runOnce = () => harness.run(config, taskInput(++runSeq));
  await closedLoop(async () => void (await runOnce()), Math.max(inFlight, Math.ceil(runs / 10)), inFlight);
  const probes: RunProbe[] = [];
  await harness.sim.take();
  const redisBefore = await sampleRedisBytes(admin);
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const loop = await closedLoop(async () => void probes.push(await runOnce()), runs, inFlight);
  const mainBusy = performance.eventLoopUtilization(eluBefore).utilization;
  const cpu = process.cpuUsage(cpuBefore);
  const sim = await harness.sim.take();
  const redisAfter = await sampleRedisBytes(admin);
  const steps: StepSample[] = probes.flatMap((p) => stepsOf(p, sim.handledMs));
  // Only the checkpointed configuration keeps a run's whole record (state, messages, events).
  const weighed =
    config === 'checkpoints' || config === 'wholeCheckpoints'
      ? probes.flatMap((p) => (p.runId ? [p.runId] : []))
      : [];
  const record = await runRecordBytes(admin, harness.keys, weighed.slice(-WEIGHED_RUNS));
  const recordBytes = record.perRun;
  if (recordBytes.length > 0) {
    const parts = [...record.byKey].map(([name, bytes]) => {
      const encoding = record.encodings.get(name);
      return `${name} ${fmt(median(bytes), 0)}${encoding ? ` (${encoding})` : ''}`;
    });
    console.log(
      `  @${inFlight} a finished run's record, median bytes by key (encoding): ${parts.join(', ')}`,
    );
  }
  return phaseFigures({
    runs,
    elapsedMs: loop.elapsedMs,
    runLatenciesMs: loop.latenciesMs,
    steps,
    redisBefore,
    redisAfter,
    nodeCpuUs: cpu.user + cpu.system,
    simCpuUs: sim.cpuUs,
    mainBusy,
    simBusy: sim.busy,
    recordBytesPerRun: recordBytes.length > 0 ? median(recordBytes) : Number.NaN,
  });
}

type Key = `${ConfigName}@${number}`;

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
  const seqRuns = envInt('BENCH_LOOP_RUNS_SEQ', 150, 1);
  const loadRuns = envInt('BENCH_LOOP_RUNS_LOAD', 640, 1);
  const inFlightLoad = envInt('BENCH_LOOP_IN_FLIGHT', 64, 2);
  const rounds = envInt('BENCH_LOOP_ROUNDS', 5, 1);
  const withCheckpoints = envInt('BENCH_LOOP_CHECKPOINTS', 1, 0) > 0;
  const simMode = process.env.BENCH_LOOP_SIM === 'inline' ? 'inline' : 'process';
  const executorMode = process.env.BENCH_LOOP_EXECUTOR === 'process' ? 'process' : 'inline';
  const llmLatencyMs = envInt('BENCH_LOOP_LLM_LATENCY_MS', 0, 0);
  const configs = CONFIGS.filter(
    (c) => withCheckpoints || (c !== 'checkpoints' && c !== 'wholeCheckpoints' && c !== 'checkpointFloor'),
  );
  const levels = [
    { inFlight: 1, runs: seqRuns },
    { inFlight: inFlightLoad, runs: loadRuns },
  ];
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-bench-loop-'));
  let harness: LoopHarness | undefined;
  const started = performance.now();
  try {
    const environment = await benchEnvironment((section) => admin.info(section));
    const redisVersion = environment.redis;
    const h = await startLoopHarness({ redisUrl, tmpDir, simMode, executorMode, llmLatencyMs });
    harness = h;
    console.log(
      `agent-loop bench: plan + ${TOOL_STEPS} no-op tool turns + final answer, llm-sim latency ${llmLatencyMs} ms; ` +
        `${seqRuns} runs @ 1 and ${loadRuns} runs @ ${inFlightLoad} in flight per phase ` +
        `(+10% warm-up each, +25% once before round 1), ${rounds} rounds, executor concurrency ${h.executorConcurrency}; ` +
        `in-process = runAgent + runTool called directly (no Redis)`,
    );
    console.log(
      `node ${process.version}, redis ${redisVersion} at ${redisUrl}, ${os.cpus().length} CPUs, ` +
        `${os.loadavg()[0]?.toFixed(2)} load; runner in this process, executor ` +
        (executorMode === 'inline' ? 'in this process too' : 'in a child process') +
        `, llm-sim ${simMode === 'inline' ? 'in this process' : 'in a child process'}`,
    );
    // One unmeasured pass over every phase first: JIT, connection pools and Redis warm up before round 1.
    for (const { inFlight, runs } of levels) {
      for (const config of configs) {
        const warm = Math.max(inFlight, Math.ceil(runs / 4));
        await closedLoop(async () => void (await h.run(config, `warm-up #${++runSeq}`)), warm, inFlight);
      }
    }
    await h.sim.take();
    const figures = new Map<Key, PhaseFigures[]>();
    for (let round = 1; round <= rounds; round += 1) {
      // Rotating the order keeps a configuration from always running first (or right after another).
      const order = configs.map((_, i) => configs[(i + round - 1) % configs.length] as ConfigName);
      for (const { inFlight, runs } of levels) {
        for (const config of order) {
          const f = await measurePhase(h, admin, config, inFlight, runs);
          const key: Key = `${config}@${inFlight}`;
          figures.set(key, [...(figures.get(key) ?? []), f]);
          console.log(
            `  round ${round} @${String(inFlight).padEnd(3)} ${CONFIG_LABELS[config].padEnd(14)}` +
              `${fmt(f.runsPerS, 0).padStart(6)} runs/s   overhead/step p50 ${fmt(f.overheadMs.p50, 3)} ms` +
              `   p99 ${fmt(f.overheadMs.p99, 3)} ms`,
          );
        }
      }
    }
    const med = new Map<Key, Medians>([...figures].map(([k, rs]) => [k, medianFigures(rs)]));
    const cols = levels.flatMap(({ inFlight }) => configs.map((c) => ({ key: `${c}@${inFlight}` as Key })));
    const get = (key: Key) => med.get(key) as Medians;

    console.log(`\nmedian of ${rounds} rounds (ms unless stated)`);
    const header = [
      '',
      ...levels.flatMap(({ inFlight }) => configs.map((c) => `${CONFIG_LABELS[c]} @${inFlight}`)),
    ];
    const row = (label: string, pick: (m: Medians) => number, digits: number): [string, ...string[]] => [
      label,
      ...cols.map(({ key }) => fmt(pick(get(key)), digits)),
    ];
    printTable(header, [
      row('runs/s', (m) => m.runsPerS, 0),
      row('run latency p50', (m) => m.runMs.p50, 2),
      row('step wall p50', (m) => m.stepWallMs.p50, 3),
      row('LLM (client) p50', (m) => m.llmClientMs.p50, 3),
      row('LLM (simulator) p50', (m) => m.llmSimMs.p50, 3),
      row('overhead/step p50', (m) => m.overheadMs.p50, 3),
      row('overhead/step p90', (m) => m.overheadMs.p90, 3),
      row('overhead/step p99', (m) => m.overheadMs.p99, 3),
      row('  excl. LLM client p50', (m) => m.overheadExClientMs.p50, 3),
      row('  excl. LLM client p99', (m) => m.overheadExClientMs.p99, 3),
      row('step mean: pre', (m) => m.breakdownMs.pre, 3),
      row('  LLM simulator', (m) => m.breakdownMs.llmSim, 3),
      row('  LLM SDK + HTTP', (m) => m.breakdownMs.llmHttp, 3),
      row('  post', (m) => m.breakdownMs.post, 3),
      row('  dispatch', (m) => m.breakdownMs.dispatch, 3),
      row('  tool', (m) => m.breakdownMs.tool, 3),
      row('step p50: pre', (m) => m.partsP50Ms.pre, 3),
      row('  post', (m) => m.partsP50Ms.post, 3),
      row('  dispatch', (m) => m.partsP50Ms.dispatch, 3),
      row('redis commands / step', (m) => m.redisCommandsPerStep, 1),
      row('redis bytes in / step', (m) => m.redisBytesInPerStep, 0),
      row('redis CPU / run (µs)', (m) => m.redisCpuUsPerRun, 0),
      row('node CPU / run (µs)', (m) => m.nodeCpuUsPerRun, 0),
      row('llm-sim CPU / run (µs)', (m) => m.simCpuUsPerRun, 0),
      row('redis bytes / finished run', (m) => m.recordBytesPerRun, 0),
      row('event loop busy (%)', (m) => m.mainBusy * 100, 0),
      row('llm-sim busy (%)', (m) => m.simBusy * 100, 0),
    ]);
    console.log(
      'step: previous step end -> last tool_result of the turn; overhead = wall - simulator - tool; ' +
        '"excl. LLM client" subtracts the client-side LLM latency instead (SDK + HTTP not counted); ' +
        'pre = previous checkpoint + breaker read + prompt; post = llm_request emit + checkpoint; ' +
        'dispatch = dispatch round trip - tool; per step = per run / 3; bytes in = total_net_input_bytes',
    );

    const unmatched = cols.reduce((sum, { key }) => sum + get(key).unmatchedSim, 0);
    if (unmatched > 0) {
      console.log(`note: ${unmatched} steps had no simulator timing; their client-side LLM time was used`);
    }

    const diffs = Object.fromEntries(
      levels.map(({ inFlight }) => {
        const base = get(`baseline@${inFlight}`);
        const plat = get(`platform@${inFlight}`);
        const job = get(`job@${inFlight}`);
        const unstreamed = get(`unstreamed@${inFlight}`);
        const ckpt = med.get(`checkpoints@${inFlight}`);
        return [
          `inFlight${inFlight}`,
          {
            platformMinusBaselineOverheadMs: {
              p50: plat.overheadMs.p50 - base.overheadMs.p50,
              p90: plat.overheadMs.p90 - base.overheadMs.p90,
              p99: plat.overheadMs.p99 - base.overheadMs.p99,
            },
            runsPerSPlatformOverBaseline: plat.runsPerS / base.runsPerS,
            overheadP50PlatformOverBaseline: plat.overheadMs.p50 / base.overheadMs.p50,
            overheadP50JobOverBaseline: job.overheadMs.p50 / base.overheadMs.p50,
            overheadP50PlatformOverJob: plat.overheadMs.p50 / job.overheadMs.p50,
            runsPerSJobOverBaseline: job.runsPerS / base.runsPerS,
            overheadP50StreamedOverUnstreamed: plat.overheadMs.p50 / unstreamed.overheadMs.p50,
            ...(ckpt
              ? {
                  checkpointsMinusPlatformOverheadMs: {
                    p50: ckpt.overheadMs.p50 - plat.overheadMs.p50,
                    p99: ckpt.overheadMs.p99 - plat.overheadMs.p99,
                  },
                  runsPerSCheckpointsOverPlatform: ckpt.runsPerS / plat.runsPerS,
                  checkpointRedisCommandsPerStep: ckpt.redisCommandsPerStep - plat.redisCommandsPerStep,
                  checkpointRedisBytesInPerStep: ckpt.redisBytesInPerStep - plat.redisBytesInPerStep,
                }
              : {}),
            targetMet: plat.overheadMs.p50 <= TARGET_OVERHEAD_P50_MS,
          },
        ];
      }),
    );
    console.log('');
    for (const { inFlight } of levels) {
      const d = diffs[`inFlight${inFlight}`] as (typeof diffs)[string];
      const plat = get(`platform@${inFlight}`);
      console.log(
        `@${inFlight}: platform overhead/step p50 ${fmt(plat.overheadMs.p50, 3)} ms ` +
          `(target <= ${TARGET_OVERHEAD_P50_MS} ms: ${d.targetMet ? 'met' : 'NOT met'}); ` +
          `platform - in-process p50 ${fmt(d.platformMinusBaselineOverheadMs.p50, 3)} ` +
          `p90 ${fmt(d.platformMinusBaselineOverheadMs.p90, 3)} p99 ${fmt(d.platformMinusBaselineOverheadMs.p99, 3)} ms; ` +
          `runs/s platform/in-process ${fmt(d.runsPerSPlatformOverBaseline, 2)}`,
      );
      console.log(
        `     overhead/step p50 as a ratio to in-process: platform ${fmt(d.overheadP50PlatformOverBaseline, 2)}, ` +
          `BullMQ job ${fmt(d.overheadP50JobOverBaseline, 2)} (the floor of one BullMQ job per call); ` +
          `platform/BullMQ job ${fmt(d.overheadP50PlatformOverJob, 2)}; ` +
          `runs/s BullMQ job/in-process ${fmt(d.runsPerSJobOverBaseline, 2)}`,
      );
      const ratio = d.overheadP50StreamedOverUnstreamed;
      console.log(
        `     streamed turns: overhead/step p50 as a ratio to not streamed ${fmt(ratio, 2)} ` +
          `(target <= ${STREAM_OVERHEAD_RATIO_TARGET}: ${ratio <= STREAM_OVERHEAD_RATIO_TARGET ? 'met' : 'NOT met'})`,
      );
      if (d.checkpointsMinusPlatformOverheadMs) {
        console.log(
          `     checkpoints: runs/s ckpt/platform ${fmt(d.runsPerSCheckpointsOverPlatform ?? NaN, 2)}, ` +
            `+${fmt(d.checkpointsMinusPlatformOverheadMs.p50, 3)} ms overhead/step p50, ` +
            `+${fmt(d.checkpointRedisCommandsPerStep ?? NaN, 1)} redis commands/step, ` +
            `+${fmt(d.checkpointRedisBytesInPerStep ?? NaN, 0)} bytes in/step`,
        );
      }
    }

    // Each ratio is the median of the rounds' own ratios (`roundRatio`).
    const paired = (a: Key, b: Key, pick: (f: PhaseFigures) => number) =>
      roundRatio(figures.get(a) ?? [], figures.get(b) ?? [], pick);
    const loopTargets: Target[] = [
      ...levels.map(({ inFlight }) =>
        target(
          `overhead/step p50 @${inFlight}, platform/job`,
          paired(`platform@${inFlight}`, `job@${inFlight}`, (f) => f.overheadMs.p50),
          '<=',
          1.1,
        ),
      ),
      ...levels.map(({ inFlight }) =>
        target(
          `node CPU/run @${inFlight}, platform/in-process`,
          paired(`platform@${inFlight}`, `baseline@${inFlight}`, (f) => f.nodeCpuUsPerRun),
          '<=',
          1.5,
        ),
      ),
      ...(withCheckpoints
        ? [
            target(
              'redis memory per finished run',
              Math.max(...levels.map(({ inFlight }) => get(`checkpoints@${inFlight}`).recordBytesPerRun)) /
                1024,
              '<=',
              8,
              'KB',
            ),
          ]
        : []),
    ];
    if (withCheckpoints) loopTargets.push(...checkpointTargets(figures, levels));
    console.log("\ntargets (ratios: the median of the rounds' own ratios)");
    for (const t of loopTargets) console.log(`  ${formatTarget(t)}`);
    // Where the loop with each call a bare BullMQ job already costs more than a target allows, the target
    // is below the floor of one BullMQ job per call.
    const jobFloor = levels.map(({ inFlight }) => ({
      inFlight,
      nodeCpu: paired(`job@${inFlight}`, `baseline@${inFlight}`, (f) => f.nodeCpuUsPerRun).paired,
    }));
    console.log(
      '  the loop with each call a bare BullMQ job, same statistic: ' +
        jobFloor.map((j) => `node CPU/run @${j.inFlight} ${fmt(j.nodeCpu, 2)}× in-process`).join(', '),
    );
    // The least the platform's design pays per call, against the targets' own baselines.
    const designFloor = levels.map(({ inFlight }) => ({
      inFlight,
      overhead: paired(`design@${inFlight}`, `job@${inFlight}`, (f) => f.overheadMs.p50).paired,
      nodeCpu: paired(`design@${inFlight}`, `baseline@${inFlight}`, (f) => f.nodeCpuUsPerRun).paired,
    }));
    console.log(
      '  the design floor (job + check-and-start + record-and-reply + reply read), same statistic: ' +
        designFloor
          .map(
            (d) =>
              `overhead/step p50 @${d.inFlight} ${fmt(d.overhead, 2)}× the job's, ` +
              `node CPU/run @${d.inFlight} ${fmt(d.nodeCpu, 2)}× in-process`,
          )
          .join('; '),
    );

    console.log(`\nredis commands per step at 1 in flight (last round; script-internal calls included)`);
    const perStep = (f: PhaseFigures | undefined) =>
      f
        ? f.redisCommands.calls
            .map(([name, n]) => [name, n / (f.runs * TOOL_STEPS)] as const)
            // Other clients of a shared Redis add a trickle of their own commands.
            .filter(([, n]) => n >= 0.05)
        : [];
    const lastRound = Object.fromEntries(configs.map((c) => [c, figures.get(`${c}@1`)?.at(-1)]));
    for (const c of configs) {
      const top = perStep(lastRound[c])
        .slice(0, TOP_COMMANDS)
        .map(([name, n]) => `${name} ${n.toFixed(1)}`)
        .join(', ');
      console.log(`  ${CONFIG_LABELS[c].padEnd(14)} ${top || '(none)'}`);
    }

    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'agent-loop.json');
    const report = {
      date: new Date().toISOString(),
      environment,
      settings: {
        seqRuns,
        loadRuns,
        inFlight: levels.map((l) => l.inFlight),
        rounds,
        toolStepsPerRun: TOOL_STEPS,
        executorConcurrency: h.executorConcurrency,
        llmLatencyMs,
        simMode,
        executorMode,
        baseline: 'runAgent with a dispatcher calling runTool (executor pipeline) in-process; no Redis',
        targetOverheadP50Ms: TARGET_OVERHEAD_P50_MS,
      },
      definitions: { step: STEP_DEFINITION },
      median: Object.fromEntries(med),
      diffs,
      targets: loopTargets,
      rounds: Object.fromEntries(
        [...figures].map(([k, rs]) => [k, rs.map(({ redisCommands: _, ...f }) => f)]),
      ),
      redisCommandsPerStepAt1: Object.fromEntries(
        configs.map((c) => [c, Object.fromEntries(perStep(lastRound[c]))]),
      ),
      durationS: (performance.now() - started) / 1000,
    };
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote ${path.relative(process.cwd(), jsonPath)} (${report.durationS.toFixed(0)} s)`);
  } finally {
    await harness?.close();
    await admin.quit();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
