#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { createKeys, newRunId, type RunStatus } from '@agent-reach/protocol';
import type { ApplyOutcome } from './config-apply.js';
import { inline, inlineStrings, jsonLine, multiline } from './terminal.js';
import { costLines } from './cost.js';
import { USAGE, usageOf } from './usage.js';

// Each command imports what it needs when it runs: `--help` and the small commands never load the
// scheduler, the executor or the simulator.

/** Exit codes, documented in --help. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  configProblems: 4,
  runNotSucceeded: 5,
} as const;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return EXIT.ok;
  }
  switch (command) {
    case 'dev':
      return dev(rest);
    // Process commands run the package's own entry point, which parses the remaining arguments.
    case 'scheduler':
      return delegate(rest, () => import('@agent-reach/scheduler/main'));
    case 'executor':
      return delegate(rest, () => import('@agent-reach/executor/main'));
    case 'llm-sim':
      return delegate(rest, () => import('@agent-reach/llm-sim/main'));
    case 'archiver':
      return delegate(rest, () => import('@agent-reach/archive/main'));
    case 'runs':
      return runs(rest);
    case 'run':
      return startRun(rest);
    case 'workflows':
      return workflows(rest);
    case 'schedules':
      return (await import('./schedules.js')).schedules(rest);
    case 'config':
      return config(rest);
    case 'approve':
    case 'reject':
      return decide(command, rest);
    case 'cancel':
      return cancel(rest);
    case 'mcp':
      return mcp(rest);
    case 'eval':
      // Over the HTTP API (AGENT_REACH_URL, AGENT_REACH_KEY), with exit codes of its own (--help).
      return (await import('@agent-reach/evals')).evalCommand(rest, process.env);
    default:
      throw new UsageError(`unknown command "${command}"; see agent-reach --help`);
  }
}

async function delegate(args: string[], load: () => Promise<unknown>): Promise<number> {
  process.argv = [process.argv[0] ?? 'node', process.argv[1] ?? 'agent-reach', ...args];
  await load();
  return -1; // the process keeps running; its entry point owns the exit
}

/** Whether the arguments ask for a command's usage. */
function wantsHelp(argv: string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}

/** The arguments `runs` takes; each sub-command reads the ones it needs. */
const RUNS_OPTIONS = {
  agent: { type: 'string' },
  status: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  metadata: { type: 'string' },
  trace: { type: 'string' },
  tool: { type: 'string' },
  'error-kind': { type: 'string' },
  cursor: { type: 'string' },
  json: { type: 'boolean' },
  live: { type: 'boolean' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type CliContext = import('./context.js').CliContext;

/** One `runs` sub-command: its parsed arguments over an open context. */
interface RunsCall {
  ctx: CliContext;
  values: ReturnType<typeof parseArgs<{ options: typeof RUNS_OPTIONS; allowPositionals: true }>>['values'];
  positionals: string[];
}

const RUNS_COMMANDS: Record<string, (c: RunsCall) => Promise<number>> = {
  ls: runsLs,
  show: runsShow,
  events: runsEvents,
  replay: runsReplay,
};

/** The handler a sub-command name stands for in a table, if any. */
function subCommand<H>(table: Record<string, H>, sub: string): H | undefined {
  return Object.hasOwn(table, sub) ? table[sub] : undefined;
}

async function runs(argv: string[]): Promise<number> {
  const sub = argv[0]?.startsWith('-') ? undefined : argv[0];
  const rest = sub === undefined ? argv : argv.slice(1);
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: RUNS_OPTIONS });
  if (values.help || !sub) {
    console.log(usageOf('runs'));
    return sub || values.help ? EXIT.ok : EXIT.usage;
  }
  const command = subCommand(RUNS_COMMANDS, sub);
  if (!command) throw new UsageError(`unknown runs command "${sub}"; use ls, show, events or replay`);
  const { openContext } = await import('./context.js');
  const ctx = await openContext(process.env);
  try {
    return await command({ ctx, values, positionals });
  } finally {
    await ctx.close();
  }
}

/** The run id a `runs` sub-command is about. */
function runIdOf(sub: string, positionals: string[]): string {
  const runId = positionals[0];
  if (!runId) throw new UsageError(`runs ${sub} needs a run id`);
  return runId;
}

async function runsLs({ ctx, values }: RunsCall): Promise<number> {
  const pair = values.metadata;
  if (pair !== undefined && !/^[^=]+=/.test(pair))
    throw new UsageError('--metadata must be KEY=VALUE, e.g. --metadata user_id=42');
  const page = await ctx.control.search({
    ...(values.agent ? { agents: new Set([values.agent]) } : {}),
    ...(values.status ? { status: values.status as RunStatus } : {}),
    ...(values.since ? { since: time(values.since, '--since') } : {}),
    ...(values.until ? { until: time(values.until, '--until') } : {}),
    ...(values.trace ? { traceId: values.trace } : {}),
    ...(values.tool ? { tool: values.tool } : {}),
    ...(values['error-kind'] ? { errorKind: values['error-kind'] } : {}),
    ...(pair !== undefined
      ? { metadata: { [pair.slice(0, pair.indexOf('='))]: pair.slice(pair.indexOf('=') + 1) } }
      : {}),
    ...(values.cursor ? { cursor: values.cursor } : {}),
    limit: values.limit ? positive(values.limit, '--limit') : 50,
  });
  if (values.json) {
    // The API's listing shape, snake_case like every other wire.
    const { summaryView } = await import('@agent-reach/scheduler/internal');
    for (const r of page.runs) console.log(jsonLine(summaryView(r)));
  } else {
    console.log(`${'run id'.padEnd(44)} ${'agent'.padEnd(24)} ${'status'.padEnd(18)} created`);
    for (const r of page.runs) {
      console.log(
        `${inline(r.runId).padEnd(44)} ${inline(r.agent).padEnd(24)} ${inline(r.status).padEnd(18)} ${new Date(r.createdAt).toISOString()}`,
      );
    }
  }
  // On stderr, so that --json output stays one run per line.
  if (page.nextCursor) console.error(`more: --cursor ${page.nextCursor}`);
  return EXIT.ok;
}

async function runsShow({ ctx, positionals }: RunsCall): Promise<number> {
  const runId = runIdOf('show', positionals);
  const run = await ctx.control.get(runId);
  if (!run) return notFound(`run ${runId}`);
  const { summary } = inlineStrings({ summary: run.summary });
  console.log(
    `run ${inline(runId)}  agent ${summary.agent}  trace ${summary.traceId}  status ${summary.status}`,
  );
  const { renderTimeline } = await import('@agent-reach/scheduler');
  // Each event on its own line, whatever its text holds.
  console.log(renderTimeline(inlineStrings(await ctx.control.events(runId))));
  const outcome = run.state?.outcome;
  if (outcome) {
    console.log(
      inline(
        `outcome: ${outcome.status} (${outcome.reason}), ${outcome.iterations} turns, ${outcome.usage.total_tokens} tokens`,
      ).replace(/^/, '\n'),
    );
    for (const line of costLines(run.state)) console.log(inline(line));
    if (outcome.answer) console.log(`answer: ${multiline(outcome.answer)}`);
    if (outcome.output !== undefined) console.log(`output:\n${outputJson(outcome.output)}`);
    if (outcome.report) console.log(`report: ${multiline(outcome.report)}`);
  }
  const { callbackLines, readDeliveries } = await import('./callback-lines.js');
  for (const line of callbackLines(await readDeliveries(ctx.redis, ctx.config.keyPrefix, runId)))
    console.log(line);
  return EXIT.ok;
}

async function runsEvents({ ctx, positionals }: RunsCall): Promise<number> {
  const runId = runIdOf('events', positionals);
  const events = await ctx.control.events(runId);
  if (events.length === 0 && !(await ctx.control.get(runId))) return notFound(`run ${runId}`);
  for (const e of events) console.log(jsonLine({ id: e.id, ...e.event }));
  return EXIT.ok;
}

async function runsReplay({ ctx, values, positionals }: RunsCall): Promise<number> {
  const runId = runIdOf('replay', positionals);
  if (values.force && !values.live) throw new UsageError('runs replay: --force needs --live');
  if (!(await ctx.control.get(runId))) return notFound(`run ${runId}`);
  const [{ openRunner }, { replayRun }] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/scheduler'),
  ]);
  const { runner, store } = await openRunner(ctx);
  try {
    // Names and reasons come from a recorded run: nothing of it reaches the terminal raw.
    const result = inlineStrings(
      await replayRun(runId, { runner, store }, { live: values.live === true, force: values.force === true }),
    );
    const outcome =
      typeof result.outcome === 'string'
        ? `${result.outcome} (not finished)`
        : `${result.outcome.status} (${result.outcome.reason})`;
    console.log(`replayed ${runId} as ${result.runId}: ${outcome}`);
    const by = (source: string) => result.calls.filter((c) => c.source === source);
    console.log(
      result.mode === 'recorded'
        ? `tool calls answered from the recording: ${by('recorded').length} (nothing was executed)`
        : `tool calls executed: ${by('live').length}; answered from the recording: ${by('recorded').length}`,
    );
    for (const c of by('needs_approval'))
      console.log(`needs a new approval (not run): ${c.tool} [${c.toolCallId}]`);
    for (const c of by('not_recorded'))
      console.log(`no recorded result (not run): ${c.tool} [${c.toolCallId}]`);
    if (result.recordedOutcome)
      console.log(`recorded outcome: ${result.recordedOutcome.status} (${result.recordedOutcome.reason})`);
    if (result.differences.length === 0) console.log('every tool call had the same outcome as recorded');
    for (const d of result.differences) {
      const now = d.replayed ? (d.replayed.ok ? 'ok' : d.replayed.kind) : 'not called';
      console.log(
        `differs: ${d.tool} [${d.toolCallId}]: recorded ${d.recorded.ok ? 'ok' : d.recorded.kind}, now ${now}`,
      );
    }
    return typeof result.outcome !== 'string' && result.outcome.status === 'succeeded'
      ? EXIT.ok
      : EXIT.failure;
  } finally {
    await runner.close();
  }
}

const WORKFLOWS_OPTIONS = {
  workflow: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  wait: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What the `workflows` commands load when they run. */
async function loadWorkflowModules() {
  const [
    { openContext },
    shared,
    { WorkflowControl, workflowView, workflowSummaryView },
    { createKeys, FINAL_WORKFLOW_STATUSES },
  ] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/shared'),
    import('@agent-reach/scheduler/internal'),
    import('@agent-reach/protocol'),
  ]);
  return {
    openContext,
    shared,
    WorkflowControl,
    workflowView,
    workflowSummaryView,
    createKeys,
    FINAL_WORKFLOW_STATUSES,
  };
}
type WorkflowModules = Awaited<ReturnType<typeof loadWorkflowModules>>;

/** One `workflows` sub-command: its parsed arguments over an open workflow control. */
interface WorkflowsCall {
  m: WorkflowModules;
  control: InstanceType<WorkflowModules['WorkflowControl']>;
  values: ReturnType<
    typeof parseArgs<{ options: typeof WORKFLOWS_OPTIONS; allowPositionals: true }>
  >['values'];
  positionals: string[];
  /** Where callback deliveries are read. */
  ctx: CliContext;
}

const WORKFLOWS_COMMANDS: Record<string, (c: WorkflowsCall) => Promise<number>> = {
  ls: workflowsLs,
  show: (c) => workflowsShow(c, 'show', workflowIdOf('show', c.positionals)),
  events: workflowsEvents,
  start: workflowsStart,
  cancel: workflowsCancel,
};

async function workflows(argv: string[]): Promise<number> {
  const sub = argv[0]?.startsWith('-') ? undefined : argv[0];
  const { values, positionals } = parseArgs({
    args: sub === undefined ? argv : argv.slice(1),
    allowPositionals: true,
    options: WORKFLOWS_OPTIONS,
  });
  if (values.help || !sub) {
    console.log(usageOf('workflows'));
    return sub || values.help ? EXIT.ok : EXIT.usage;
  }
  const command = subCommand(WORKFLOWS_COMMANDS, sub);
  if (!command)
    throw new UsageError(`unknown workflows command "${sub}"; use ls, show, events, start or cancel`);
  const m = await loadWorkflowModules();
  const ctx = await m.openContext(process.env);
  const keys = m.createKeys(ctx.config.keyPrefix);
  // Definitions are needed to start one: the fleet's configuration in force (the published version, or
  // the local files while nothing is published). Reading and cancelling go by the record alone.
  const fleet =
    sub === 'start'
      ? await m.shared.readFleetConfig({
          redis: ctx.redis,
          keys,
          file: ctx.config.agentsFile,
          workflowsFile: m.shared.workflowsFileOf(ctx.config),
          logger: m.shared.createLogger('cli', { level: 'silent' }),
        })
      : undefined;
  const control = new m.WorkflowControl(
    ctx.redis,
    keys,
    fleet?.workflows ?? { workflows: new Map(), document: [] },
    { configVersion: () => fleet?.version ?? 0 },
  );
  try {
    return await command({ m, control, values, positionals, ctx });
  } finally {
    await control.close();
    await ctx.close();
  }
}

/** The workflow id a `workflows` sub-command is about. */
function workflowIdOf(sub: string, positionals: string[]): string {
  const id = positionals[0];
  if (!id) throw new UsageError(`workflows ${sub} needs a workflow id`);
  return id;
}

async function workflowsLs({ m, control, values }: WorkflowsCall): Promise<number> {
  const list = await control.list({
    ...(values.workflow ? { name: values.workflow } : {}),
    ...(values.status ? { status: values.status as never } : {}),
    limit: values.limit ? positive(values.limit, '--limit') : 50,
  });
  if (values.json) for (const w of list) console.log(jsonLine(m.workflowSummaryView(w)));
  else {
    console.log(`${'workflow id'.padEnd(40)} ${'workflow'.padEnd(24)} ${'status'.padEnd(10)} created`);
    for (const w of list)
      console.log(
        `${inline(w.workflowId).padEnd(40)} ${inline(w.name).padEnd(24)} ${inline(w.status).padEnd(10)} ${new Date(w.createdAt).toISOString()}${w.lowConfidence ? '  low_confidence' : ''}`,
      );
  }
  return EXIT.ok;
}

/** Starts a workflow; with --wait, waits for it to end and shows it. */
async function workflowsStart(c: WorkflowsCall): Promise<number> {
  const [name, ...words] = c.positionals;
  const input = words.join(' ').trim();
  if (!name || !input) throw new UsageError('workflows start needs a workflow name and a request');
  if (!c.control.resolve(name)) return notFound(c.control.unknown(name));
  const id = (await c.control.start({ workflow: name, input })).workflowId;
  console.log(`started ${id}`);
  if (!c.values.wait) return EXIT.ok;
  await c.control.wait(id, 24 * 3600_000, 250);
  return workflowsShow(c, 'start', id);
}

async function workflowsCancel({ m, control, positionals }: WorkflowsCall): Promise<number> {
  const id = workflowIdOf('cancel', positionals);
  const record = await control.get(id);
  if (!record) return notFound(`workflow ${id}`);
  if (m.FINAL_WORKFLOW_STATUSES.has(record.status)) {
    console.error(inline(`workflow ${id} already ended (${record.status})`));
    return EXIT.failure;
  }
  await control.cancel(id);
  console.log(inline(`cancellation of ${id} requested`));
  return EXIT.ok;
}

async function workflowsEvents({ control, positionals }: WorkflowsCall): Promise<number> {
  const id = workflowIdOf('events', positionals);
  if (!(await control.get(id))) return notFound(`workflow ${id}`);
  for (const e of await control.events(id)) console.log(jsonLine({ id: e.id, ...e.event }));
  return EXIT.ok;
}

/** Shows a workflow and its nodes (after `start --wait`: its exit code says whether it succeeded). */
async function workflowsShow(
  { m, control, values, ctx }: WorkflowsCall,
  sub: 'show' | 'start',
  id: string,
): Promise<number> {
  const record = await control.get(id);
  if (!record) return notFound(`workflow ${id}`);
  // The API's GET /v1/workflows/{id} shape, snake_case, on one line.
  if (sub === 'show' && values.json) {
    console.log(jsonLine(m.workflowView(record)));
    return EXIT.ok;
  }
  const view = inlineStrings(m.workflowView(record));
  console.log(
    `workflow ${view.workflow_id}  ${view.workflow}  status ${view.status}${view.reason ? ` (${view.reason})` : ''}${view.config_version === undefined ? '' : `  config version ${view.config_version}`}`,
  );
  for (const n of view.nodes)
    console.log(
      `  ${n.id.padEnd(16)} ${n.status.padEnd(10)} ${n.agent}${n.depends_on.length ? ` after ${n.depends_on.join(', ')}` : ''}${n.run_id ? `  run ${n.run_id}` : ''}${n.low_confidence ? `  low_confidence${n.status !== 'defaulted' && n.low_confidence_from ? ` (from ${n.low_confidence_from.join(', ')})` : ''}` : ''}${n.status === 'succeeded' || !n.reason ? '' : `  (${n.reason})`}`,
    );
  if (view.output !== undefined)
    console.log(`output${view.low_confidence ? ' (low_confidence)' : ''}: ${multiline(view.output)}`);
  if (view.error) console.log(`error: ${view.error}`);
  if (view.report)
    console.log(`report (node ${view.report.timed_out} timed out):\n${multiline(view.report.text)}`);
  const { callbackLines, readDeliveries } = await import('./callback-lines.js');
  for (const line of callbackLines(await readDeliveries(ctx.redis, ctx.config.keyPrefix, id)))
    console.log(line);
  return sub === 'start' && view.status !== 'succeeded' ? EXIT.runNotSucceeded : EXIT.ok;
}

async function decide(command: 'approve' | 'reject', argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { by: { type: 'string' }, reason: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(usageOf(command));
    return EXIT.ok;
  }
  const [runId, toolCallId] = positionals;
  if (!runId || !toolCallId) throw new UsageError(`${command} needs a run id and a tool call id`);
  const [{ openContext }, { AgentReachError }] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/protocol'),
  ]);
  const ctx = await openContext(process.env);
  try {
    await ctx.control.decide({
      runId,
      toolCallId,
      decision: command === 'approve' ? 'approved' : 'rejected',
      ...(values.by ? { by: values.by } : {}),
      ...(values.reason ? { reason: values.reason } : {}),
    });
    console.log(inline(`${command === 'approve' ? 'approved' : 'rejected'} ${toolCallId} of ${runId}`));
    return EXIT.ok;
  } catch (err) {
    if (err instanceof AgentReachError && err.code === 'RUN_NOT_FOUND') return notFound(err.message);
    throw err;
  } finally {
    await ctx.close();
  }
}

async function mcp(argv: string[]): Promise<number> {
  if (wantsHelp(argv)) {
    console.log(usageOf('mcp'));
    return EXIT.ok;
  }
  if (argv.length > 0) throw new UsageError(`mcp takes no arguments, got "${argv[0]}"`);
  const [{ openContext }, { mcpStatus }] = await Promise.all([
    import('./context.js'),
    import('./mcp-status.js'),
  ]);
  const ctx = await openContext(process.env);
  try {
    await mcpStatus(ctx, (line) => console.log(inline(line)));
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}

async function cancel(argv: string[]): Promise<number> {
  const [runId] = argv;
  if (!runId || wantsHelp(argv)) {
    console.log(usageOf('cancel'));
    return runId ? EXIT.ok : EXIT.usage;
  }
  const { openContext } = await import('./context.js');
  const ctx = await openContext(process.env);
  try {
    if (!(await ctx.control.get(runId)) && !(await ctx.control.queue.getJob(runId)))
      return notFound(`run ${runId}`);
    await ctx.control.cancel(runId);
    console.log(inline(`cancellation of ${runId} requested`));
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}

async function dev(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      agents: { type: 'string' },
      tools: { type: 'string' },
      groups: { type: 'string' },
      scenarios: { type: 'string' },
      port: { type: 'string' },
      'sim-port': { type: 'string' },
      'executor-metrics-port': { type: 'string' },
      'scheduler-metrics-port': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usageOf('dev'));
    return EXIT.ok;
  }
  // Flags win over the environment, as for the process commands.
  const env = { ...process.env };
  if (values.agents) env.AGENTS_FILE = values.agents;
  if (values.tools) env.TOOL_MODULES = values.tools;
  if (values.groups) env.EXECUTOR_GROUPS = values.groups;
  if (values.port) env.API_PORT = port(values.port, '--port');
  if (values['sim-port']) env.LLM_SIM_PORT = port(values['sim-port'], '--sim-port');
  if (values['executor-metrics-port'])
    env.EXECUTOR_METRICS_PORT = port(values['executor-metrics-port'], '--executor-metrics-port');
  if (values['scheduler-metrics-port'])
    env.SCHEDULER_METRICS_PORT = port(values['scheduler-metrics-port'], '--scheduler-metrics-port');
  const [{ startDev }, { exitOnSignals }] = await Promise.all([
    import('./dev.js'),
    import('@agent-reach/shared'),
  ]);
  const stack = await startDev(env, values.scenarios ? { scenariosDir: values.scenarios } : {});
  console.log(`API        ${stack.apiUrl}   (Authorization: Bearer ${stack.apiKey})`);
  console.log(`docs       ${stack.docsUrl}`);
  console.log(`Bull Board ${stack.boardUrl}   (HTTP Basic, any user, the key as password)`);
  console.log(
    stack.simUrl
      ? `model      llm-sim at ${stack.simUrl} (no OPENAI_API_KEY set), model ${stack.model}`
      : `model      ${stack.model}`,
  );
  console.log('Ctrl-C stops everything.');
  exitOnSignals(() => stack.close(), stack.logger);
  return -1;
}

async function startRun(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      agent: { type: 'string', short: 'a' },
      follow: { type: 'boolean', short: 'f' },
      model: { type: 'string' },
      session: { type: 'string' },
      'output-schema': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usageOf('run'));
    return EXIT.ok;
  }
  const input = positionals.join(' ').trim();
  if (!input)
    throw new UsageError(
      'run needs a task, e.g. agent-reach run "check order ORD-123456" --agent customer_service_agent',
    );
  if (!values.agent) throw new UsageError('run needs --agent');
  const outputSchema =
    values['output-schema'] === undefined ? undefined : await readOutputSchema(values['output-schema']);
  const { openContext } = await import('./context.js');
  const ctx = await openContext(process.env);
  // Followed, the run's streamed text is subscribed to before the run starts, so none of it is missed.
  const runId = newRunId();
  const live = values.follow
    ? await ctx.subscribe(createKeys(ctx.config.keyPrefix).runDeltas(runId))
    : undefined;
  try {
    await ctx.control.start({
      runId,
      agent: values.agent,
      input,
      ...(values.model ? { model: values.model } : {}),
      ...(values.session ? { sessionId: values.session } : {}),
      ...(outputSchema ? { outputSchema } : {}),
    });
    console.log(`started ${runId}`);
    if (!values.follow) return EXIT.ok;
    const { AnswerPrinter, followRun } = await import('./follow.js');
    const answers = new AnswerPrinter(
      (text) => process.stdout.write(text),
      async () => live?.ping(),
    );
    live?.on('message', (_channel: string, text: string) => answers.delta(text));
    const last = await followRun(ctx.control, runId, (line) => console.log(line), 200, answers);
    answers.end();
    if (last.type !== 'run_finished') return EXIT.failure;
    if (last.outcome.answer) console.log(`\nanswer: ${multiline(last.outcome.answer)}`);
    if (last.outcome.output !== undefined) console.log(`output:\n${outputJson(last.outcome.output)}`);
    return last.outcome.status === 'succeeded' ? EXIT.ok : EXIT.runNotSucceeded;
  } finally {
    live?.disconnect();
    await ctx.close();
  }
}

/** A run's output as indented JSON, each line made safe for the terminal. */
function outputJson(output: unknown): string {
  return JSON.stringify(output, null, 2)
    .split('\n')
    .map((line) => `  ${inline(line)}`)
    .join('\n');
}

/** The JSON Schema of `--output-schema FILE`: bad usage (naming the problem) when it cannot be used. */
async function readOutputSchema(file: string): Promise<Record<string, unknown>> {
  const { readFile } = await import('node:fs/promises');
  const { outputSchemaProblems } = await import('@agent-reach/shared');
  let schema: unknown;
  try {
    schema = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--output-schema ${file}: ${(err as Error).message}`);
  }
  const problems = outputSchemaProblems(schema);
  if (problems.length > 0) throw new UsageError(`--output-schema ${file}: ${problems.join('; ')}`);
  return schema as Record<string, unknown>;
}

async function config(argv: string[]): Promise<number> {
  const [sub] = argv;
  if (sub === undefined || wantsHelp(argv)) {
    console.log(usageOf('config'));
    return sub ? EXIT.ok : EXIT.usage;
  }
  if (sub === 'apply') return configApplyCommand(argv.slice(1));
  if (sub === 'show') return configShow(argv.slice(1));
  if (sub === 'history') return configHistory(argv.slice(1));
  if (sub === 'rollback') return configRollbackCommand(argv.slice(1));
  if (sub !== 'check')
    throw new UsageError(`unknown config command "${sub}"; use check, apply, show, history or rollback`);
  const extra = argv.slice(1).filter((a) => a !== '--probe');
  if (extra.length > 0)
    throw new UsageError(`config check takes no arguments but --probe, got "${extra[0]}"`);
  const { configCheck } = await import('./config-check.js');
  const problems = await configCheck(process.env, (line) => console.log(inline(line)), {
    probe: argv.includes('--probe'),
  });
  for (const p of problems) console.error(`problem: ${multiline(p)}`);
  if (problems.length === 0) console.log('no problems found');
  return problems.length ? EXIT.configProblems : EXIT.ok;
}

async function configApplyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { workflows: { type: 'string' }, providers: { type: 'string' }, by: { type: 'string' } },
  });
  const [file, extra] = positionals;
  if (file === undefined) throw new UsageError('config apply needs the agents file to publish');
  if (extra !== undefined)
    throw new UsageError(
      `config apply takes one agents file, got "${extra}" too (a workflows file goes with --workflows)`,
    );
  const [{ openContext }, { configApply }] = await Promise.all([
    import('./context.js'),
    import('./config-apply.js'),
  ]);
  const ctx = await openContext(process.env);
  try {
    const outcome = await configApply(ctx, process.env, file, {
      ...(values.workflows ? { workflowsFile: values.workflows } : {}),
      ...(values.providers ? { providersFile: values.providers } : {}),
      ...(values.by ? { by: values.by } : {}),
    });
    const code = reportApply(outcome);
    if (outcome.published) await reportMcpOutcome(ctx, outcome.version);
    return code;
  } finally {
    await ctx.close();
  }
}

/**
 * Prints what the executors made of a published version's MCP servers: each server's outcome, a server
 * down or a change refused (the server as it was serving), an agent naming a tool its server lacks.
 */
async function reportMcpOutcome(ctx: CliContext, version: number): Promise<void> {
  const { reportMcpApply } = await import('./mcp-apply-report.js');
  const mcp = await reportMcpApply(ctx.redis, ctx.config.keyPrefix, version);
  for (const line of mcp.lines) console.log(inline(line));
  for (const w of mcp.warnings) console.error(`warning: ${multiline(w)}`);
}

/** Prints what an apply or a rollback did; its exit code. */
function reportApply(outcome: ApplyOutcome): number {
  if (outcome.published) {
    const { count, from } = outcome.workflows;
    console.log(
      inline(
        `published configuration version ${outcome.version} with ${count} workflow${count === 1 ? '' : 's'} (${from})`,
      ),
    );
    if (outcome.providers)
      console.log(inline(`model providers: ${outcome.providers.count} (${outcome.providers.from})`));
    return EXIT.ok;
  }
  for (const p of outcome.problems) console.error(`problem: ${multiline(p)}`);
  console.error(
    outcome.inForce === undefined
      ? 'refused: nothing was published; processes keep their local agents file'
      : `refused: configuration version ${outcome.inForce} stays in force`,
  );
  return EXIT.configProblems;
}

/** A configuration version named on the command line. */
function configVersion(value: string | undefined, command: string): number {
  if (value === undefined) throw new UsageError(`${command} needs a version`);
  if (!/^[1-9]\d{0,14}$/.test(value))
    throw new UsageError(`${command}: the version must be a positive integer, got "${value}"`);
  return Number(value);
}

async function configRollbackCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { by: { type: 'string' } },
  });
  if (positionals.length > 1)
    throw new UsageError(`config rollback takes one version, got "${positionals[1]}" too`);
  const version = configVersion(positionals[0], 'config rollback');
  const [{ openContext }, { configRollback }] = await Promise.all([
    import('./context.js'),
    import('./config-apply.js'),
  ]);
  const ctx = await openContext(process.env);
  try {
    const outcome = await configRollback(ctx, process.env, version, values.by ? { by: values.by } : {});
    if (!outcome) return notFound(`configuration version ${version} (see config history)`);
    const code = reportApply(outcome);
    if (outcome.published) await reportMcpOutcome(ctx, outcome.version);
    return code;
  } finally {
    await ctx.close();
  }
}

async function configHistory(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { json: { type: 'boolean' } },
  });
  if (positionals.length > 0)
    throw new UsageError(`config history takes no arguments, got "${positionals[0]}"`);
  const [{ openContext }, { createKeys }, { readConfigHistory }] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/protocol'),
    import('@agent-reach/shared'),
  ]);
  const ctx = await openContext(process.env);
  try {
    const history = await readConfigHistory(ctx.redis, createKeys(ctx.config.keyPrefix));
    for (const v of history) {
      if (values.json) {
        console.log(
          JSON.stringify({
            version: v.version,
            digest: v.digest,
            applied_at: v.appliedAt,
            applied_by: v.appliedBy,
            source: v.source,
          }),
        );
      } else
        console.log(
          inline(
            `version ${v.version}  digest ${v.digest}  applied ${new Date(v.appliedAt).toISOString()}  by ${v.appliedBy || 'unknown'}  (${v.source})`,
          ),
        );
    }
    if (history.length === 0 && !values.json) console.log('no configuration published yet');
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}

async function configShow(argv: string[]): Promise<number> {
  if (argv.length > 1) throw new UsageError(`config show takes one version at most, got "${argv[1]}" too`);
  const wanted = argv[0] === undefined ? undefined : configVersion(argv[0], 'config show');
  const [{ openContext }, { createKeys }, { readPublishedConfig, readConfigVersion }] = await Promise.all([
    import('./context.js'),
    import('@agent-reach/protocol'),
    import('@agent-reach/shared'),
  ]);
  const ctx = await openContext(process.env);
  try {
    const keys = createKeys(ctx.config.keyPrefix);
    const published =
      wanted === undefined
        ? await readPublishedConfig(ctx.redis, keys)
        : await readConfigVersion(ctx.redis, keys, wanted);
    if (!published)
      return notFound(
        wanted === undefined
          ? 'published configuration (processes run on their local agents file)'
          : `configuration version ${wanted} (see config history)`,
      );
    console.log(
      inline(
        `version ${published.version}, digest ${published.digest}, applied ${new Date(published.appliedAt).toISOString()} by ${published.source}`,
      ),
    );
    console.log(multiline(JSON.stringify(JSON.parse(published.document), null, 2)));
    return EXIT.ok;
  } finally {
    await ctx.close();
  }
}

function notFound(what: string): number {
  console.error(`not found: ${inline(what)}`);
  return EXIT.notFound;
}

function time(value: string, flag: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(n))
    throw new UsageError(`${flag} must be an ISO date or epoch milliseconds, got "${value}"`);
  return n;
}

function port(value: string, flag: string): string {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError(`${flag} must be a port between 0 and 65535, got "${value}"`);
  return value;
}

function positive(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} must be a positive integer, got "${value}"`);
  return n;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof UsageError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      console.error(`usage error: ${multiline((err as Error).message)}`);
      process.exit(EXIT.usage);
    }
    console.error(`error: ${multiline(err instanceof Error ? err.message : String(err))}`);
    process.exit(EXIT.failure);
  },
);
