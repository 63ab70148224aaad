import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { AgentReachError, exitOnSignals } from '@agent-reach/shared';
import { renderTimeline, replayRun, type RunStatus } from '@agent-reach/scheduler';
import { configCheck } from './config-check.js';
import { startDev } from './dev.js';
import { openContext, openRunner } from './context.js';
import { followRun } from './follow.js';
import { inline, inlineStrings, jsonLine, multiline } from './terminal.js';

const PACKAGES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

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

const HELP = `agent-reach — queue-driven tool execution for LLM agents

Usage: agent-reach <command> [options]

Processes
  dev                                all in one: executor + scheduler + HTTP API (+ llm-sim when no
                                     model is configured), on the local Redis
  scheduler [--concurrency N]        run agent runs from the agent-runs queue
  executor [--groups a,b] [--tools m.ts]  run tool calls from the tool queues
  llm-sim [--port N] [--scenarios DIR]    the OpenAI-compatible simulator

Runs
  run "<task>" --agent A [--follow] [--model M] [--session S]   start a run (and follow its progress)
  runs ls [--agent A] [--status S] [--since T] [--until T] [--limit N] [--json]
  runs show <run-id>                 the run as a readable timeline, then its outcome
  runs events <run-id>               the run's raw events, one JSON object per line
  runs replay <run-id> [--live [--force]]
                                     re-run with the recorded model turns; tool calls are answered
                                     from the recording, or with --live re-executed when their tool
                                     is read-only or idempotent (--force: any tool). Confirmation
                                     tools never run: they are reported as needing a new approval
  approve <run-id> <tool-call-id> [--by NAME] [--reason TEXT]
  reject <run-id> <tool-call-id> [--by NAME] [--reason TEXT]
  cancel <run-id>

Configuration
  config check                       validate the config, the tool registry and the agents file;
                                     print each agent's reachable tools

Every command reads REDIS_URL, AR_KEY_PREFIX and the rest of the environment (see the README).
T is an ISO date or epoch milliseconds. Add --help to a command for its options.

Exit codes: 0 success; 1 failure (Redis unreachable, bad configuration, a replay that failed);
2 bad usage; 3 run or call not found; 4 config check found problems; 5 a followed run ended
without succeeding.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(HELP);
    return EXIT.ok;
  }
  switch (command) {
    case 'dev':
      return dev(rest);
    case 'scheduler':
      return delegate('scheduler/src/main.ts', rest);
    case 'executor':
      return delegate('executor/src/main.ts', rest);
    case 'llm-sim':
      return delegate('llm-sim/src/main.ts', rest);
    case 'runs':
      return runs(rest);
    case 'run':
      return startRun(rest);
    case 'config':
      return config(rest);
    case 'approve':
    case 'reject':
      return decide(command, rest);
    case 'cancel':
      return cancel(rest);
    default:
      throw new UsageError(`unknown command "${command}"; see agent-reach --help`);
  }
}

/** Process commands run the package's own entry point, which parses the remaining arguments. */
async function delegate(script: string, args: string[]): Promise<number> {
  const file = path.join(PACKAGES, script);
  process.argv = [process.argv[0] ?? 'node', file, ...args];
  await import(pathToFileURL(file).href);
  return -1; // the process keeps running; its entry point owns the exit
}

async function runs(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      agent: { type: 'string' },
      status: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      live: { type: 'boolean' },
      force: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !sub) {
    console.log(
      HELP.split('\n')
        // A `runs` line and the indented lines that continue it.
        .filter(
          function keep(this: { inRuns: boolean }, l) {
            this.inRuns = l.includes('runs ') || (this.inRuns && /^ {30,}\S/.test(l));
            return this.inRuns;
          },
          { inRuns: false },
        )
        .join('\n'),
    );
    return EXIT.ok;
  }
  const ctx = await openContext(process.env);
  try {
    if (sub === 'ls') {
      const list = await ctx.control.list({
        ...(values.agent ? { agent: values.agent } : {}),
        ...(values.status ? { status: values.status as RunStatus } : {}),
        ...(values.since ? { since: time(values.since, '--since') } : {}),
        ...(values.until ? { until: time(values.until, '--until') } : {}),
        limit: values.limit ? positive(values.limit, '--limit') : 50,
      });
      if (values.json) for (const r of list) console.log(jsonLine(r));
      else {
        console.log(`${'run id'.padEnd(44)} ${'agent'.padEnd(24)} ${'status'.padEnd(18)} created`);
        for (const r of list) {
          console.log(
            `${inline(r.runId).padEnd(44)} ${inline(r.agent).padEnd(24)} ${inline(r.status).padEnd(18)} ${new Date(r.createdAt).toISOString()}`,
          );
        }
      }
      return EXIT.ok;
    }
    const runId = positionals[0];
    if (!runId) throw new UsageError(`runs ${sub} needs a run id`);
    if (sub === 'show') {
      const run = await ctx.control.get(runId);
      if (!run) return notFound(`run ${runId}`);
      const { summary } = inlineStrings({ summary: run.summary });
      console.log(
        `run ${inline(runId)}  agent ${summary.agent}  trace ${summary.traceId}  status ${summary.status}`,
      );
      // Each event on its own line, whatever its text holds.
      console.log(renderTimeline(inlineStrings(await ctx.control.events(runId))));
      const outcome = run.state?.outcome;
      if (outcome) {
        console.log(
          inline(
            `outcome: ${outcome.status} (${outcome.reason}), ${outcome.iterations} turns, ${outcome.usage.total_tokens} tokens`,
          ).replace(/^/, '\n'),
        );
        if (outcome.answer) console.log(`answer: ${multiline(outcome.answer)}`);
        if (outcome.report) console.log(`report: ${multiline(outcome.report)}`);
      }
      return EXIT.ok;
    }
    if (sub === 'events') {
      const events = await ctx.control.events(runId);
      if (events.length === 0 && !(await ctx.control.get(runId))) return notFound(`run ${runId}`);
      for (const e of events) console.log(jsonLine({ id: e.id, ...e.event }));
      return EXIT.ok;
    }
    if (sub === 'replay') {
      if (values.force && !values.live) throw new UsageError('runs replay: --force needs --live');
      if (!(await ctx.control.get(runId))) return notFound(`run ${runId}`);
      const { runner, store } = await openRunner(ctx);
      try {
        const result = await replayRun(
          runId,
          { runner, store },
          { live: values.live === true, force: values.force === true },
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
          console.log(
            `recorded outcome: ${result.recordedOutcome.status} (${result.recordedOutcome.reason})`,
          );
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
    throw new UsageError(`unknown runs command "${sub}"; use ls, show, events or replay`);
  } finally {
    await ctx.close();
  }
}

async function decide(command: 'approve' | 'reject', argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { by: { type: 'string' }, reason: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(`agent-reach ${command} <run-id> <tool-call-id> [--by NAME] [--reason TEXT]`);
    return EXIT.ok;
  }
  const [runId, toolCallId] = positionals;
  if (!runId || !toolCallId) throw new UsageError(`${command} needs a run id and a tool call id`);
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

async function cancel(argv: string[]): Promise<number> {
  const [runId] = argv;
  if (!runId || runId === '--help') {
    console.log('agent-reach cancel <run-id>');
    return runId ? EXIT.ok : EXIT.usage;
  }
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
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(
      'agent-reach dev: executor + scheduler + HTTP API (+ llm-sim without OPENAI_API_KEY) in one process',
    );
    return EXIT.ok;
  }
  const stack = await startDev(process.env);
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
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log('agent-reach run "<task>" --agent A [--follow] [--model M] [--session S]');
    return EXIT.ok;
  }
  const input = positionals.join(' ').trim();
  if (!input)
    throw new UsageError(
      'run needs a task, e.g. agent-reach run "check order ORD-123456" --agent customer_service_agent',
    );
  if (!values.agent) throw new UsageError('run needs --agent');
  const ctx = await openContext(process.env);
  try {
    const runId = await ctx.control.start({
      agent: values.agent,
      input,
      ...(values.model ? { model: values.model } : {}),
      ...(values.session ? { sessionId: values.session } : {}),
    });
    console.log(`started ${runId}`);
    if (!values.follow) return EXIT.ok;
    const last = await followRun(ctx.control, runId, (line) => console.log(line));
    if (last.type !== 'run_finished') return EXIT.failure;
    if (last.outcome.answer) console.log(`\nanswer: ${multiline(last.outcome.answer)}`);
    return last.outcome.status === 'succeeded' ? EXIT.ok : EXIT.runNotSucceeded;
  } finally {
    await ctx.close();
  }
}

async function config(argv: string[]): Promise<number> {
  const [sub] = argv;
  if (sub !== 'check') {
    if (sub === '--help' || sub === undefined) {
      console.log('agent-reach config check');
      return sub ? EXIT.ok : EXIT.usage;
    }
    throw new UsageError(`unknown config command "${sub}"; use check`);
  }
  const problems = await configCheck(process.env, (line) => console.log(inline(line)));
  for (const p of problems) console.error(`problem: ${multiline(p)}`);
  if (problems.length === 0) console.log('no problems found');
  return problems.length ? EXIT.configProblems : EXIT.ok;
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
