import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { AgentReachApiError, createClient } from '@agent-reach/client';
import type { EvalReport } from '@agent-reach/protocol';
import {
  DEFAULT_API_URL,
  DEFAULT_EVAL_CONCURRENCY,
  DEFAULT_RUN_TIMEOUT_MS,
  MAX_EVAL_CONCURRENCY,
  MAX_EVAL_REPEAT,
  MAX_RUN_TIMEOUT_MS,
} from './constants.js';
import { loadDataset } from './dataset.js';
import { EvalInputError, EvalInterrupted } from './errors.js';
import { formatJunit } from './format-junit.js';
import { formatMarkdown, formatTable } from './format-text.js';
import { datasetFromRuns } from './from-runs.js';
import { gateFailures, parseGate } from './gates.js';
import { quotaFetch } from './quota-fetch.js';
import { describeApiError, runEval } from './runner.js';
import { uploadReport } from './upload.js';
import { parseVariants } from './variants.js';

/** Exit codes of `agent-reach eval` (docs/evals.md). */
export const EVAL_EXIT = {
  /** The eval ran and every gate held (failing cases alone do not fail it: gates do). */
  ok: 0,
  /** A `--fail-under` or `--max-regression` gate failed. */
  gateFailed: 1,
  /** Bad input: usage, a dataset or variant that does not validate, a run request the platform refused (4xx). */
  badInput: 2,
  /** The platform could not be used: unreachable, a 5xx, the report not stored. */
  platform: 3,
  /** Stopped by SIGINT or SIGTERM: the runs in flight were cancelled, no report was made. */
  interrupted: 130,
} as const;

export const EVAL_USAGE = `Usage: agent-reach eval DATASET [options]
       agent-reach eval --from-runs FILTER [--out FILE] [--name NAME]

Runs every case of DATASET (YAML, or JSONL: a case a line) as ordinary runs of the fleet, tagged with
metadata eval, eval_variant and eval_case, scores each run against the case's expectations, and prints
the report: per variant and case, and between variants the difference with its 95 % interval and the
cases that flipped (docs/evals.md).

  --variant NAME=OVERRIDES      a variant: OVERRIDES is a JSON object or a JSON/YAML file of the run
                                variant's overrides (model, instructions, tools' descriptions, aliases
                                and examples, loop settings…); repeat for more; the first is the
                                baseline. Default: one variant "baseline" without overrides
  --agent A                     the agent of cases that name none (and the dataset neither)
  --repeat N                    runs of each case per variant (default 1)
  --concurrency N               runs in flight at once (default ${DEFAULT_EVAL_CONCURRENCY}); a 429 waits its Retry-After
  --format table|markdown|json|junit
                                the report's format (default: from --out's extension, else table)
  --out FILE                    write the report there (the table still goes to stdout)
  --fail-under [V:]METRIC=X     exit 1 when METRIC of every variant (or of V) is under X
  --max-regression [V:]METRIC=X exit 1 when METRIC of a variant (or of V) is worse than the baseline's
                                by more than X (a drop for rates, a rise for counts, cost, latency)
  --run-timeout MS              an attempt whose run takes longer fails (default 600000)
  --no-upload                   do not store the report (POST /v1/evals)
  --from-runs FILTER            write a dataset of recorded runs (live or archived): GET /v1/runs's
                                filters as agent=A&status=S&metadata=K=V&since=T&until=T&tool=T&
                                error_kind=K&trace_id=ID&limit=N; each case expects the tool path
                                its run took and its status
  --name NAME                   the dataset's name (--from-runs)

The API: AGENT_REACH_URL (default http://127.0.0.1:8080) and AGENT_REACH_KEY (or --url, --api-key).
Exit codes: 0 ok; 1 a gate failed; 2 bad input (usage, dataset, variant, a run the platform refused);
3 the platform could not be used (unreachable, 5xx, report not stored); 130 stopped by SIGINT or
SIGTERM (the runs in flight cancelled).`;

const OPTIONS = {
  variant: { type: 'string', multiple: true },
  agent: { type: 'string' },
  repeat: { type: 'string' },
  concurrency: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string' },
  'fail-under': { type: 'string', multiple: true },
  'max-regression': { type: 'string', multiple: true },
  'run-timeout': { type: 'string' },
  'no-upload': { type: 'boolean' },
  'from-runs': { type: 'string' },
  name: { type: 'string' },
  url: { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const FORMATS = ['table', 'markdown', 'json', 'junit'] as const;
type Format = (typeof FORMATS)[number];

/** Where the command writes: stdout and stderr by default. */
export interface EvalIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

const defaultIo: EvalIo = {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
};

/** `agent-reach eval`: its exit code (see {@link EVAL_EXIT}); never throws. */
export async function evalCommand(
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: EvalIo = defaultIo,
): Promise<number> {
  try {
    return await evalMain(argv, env, io);
  } catch (err) {
    if (err instanceof EvalInterrupted) {
      io.err(err.message);
      return EVAL_EXIT.interrupted;
    }
    // A request the API refused as bad (a --from-runs filter, the key): bad input, named as the API named it.
    if (err instanceof AgentReachApiError && err.status >= 400 && err.status < 500) {
      io.err(`problem: ${describeApiError(err)}`);
      return EVAL_EXIT.badInput;
    }
    if (err instanceof EvalInputError) {
      for (const p of err.problems) io.err(`problem: ${p}`);
      return EVAL_EXIT.badInput;
    }
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`usage error: ${(err as Error).message}`);
      return EVAL_EXIT.badInput;
    }
    io.err(`error: ${err instanceof Error ? err.message : String(err)}`);
    return EVAL_EXIT.platform;
  }
}

function integer(value: string | undefined, flag: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > max)
    throw new EvalInputError([`--${flag} must be an integer from 1 to ${max}, got "${value}"`]);
  return n;
}

function formatOf(format: string | undefined, out: string | undefined): Format {
  if (format !== undefined) {
    if (!(FORMATS as readonly string[]).includes(format))
      throw new EvalInputError([`--format must be one of ${FORMATS.join(', ')}, got "${format}"`]);
    return format as Format;
  }
  if (out?.endsWith('.md')) return 'markdown';
  if (out?.endsWith('.json')) return 'json';
  if (out?.endsWith('.xml')) return 'junit';
  return 'table';
}

/** The report in a format. */
export function renderReport(report: EvalReport, format: Format): string {
  if (format === 'json') return `${JSON.stringify(report, null, 2)}\n`;
  if (format === 'junit') return formatJunit(report);
  if (format === 'markdown') return formatMarkdown(report);
  return `${formatTable(report)}\n`;
}

async function evalMain(argv: string[], env: NodeJS.ProcessEnv, io: EvalIo): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  if (values.help) {
    io.out(EVAL_USAGE);
    return EVAL_EXIT.ok;
  }
  const baseUrl = values.url ?? env.AGENT_REACH_URL ?? DEFAULT_API_URL;
  const apiKey = values['api-key'] ?? env.AGENT_REACH_KEY ?? '';
  const fetch = quotaFetch(globalThis.fetch);
  const client = createClient({ baseUrl, apiKey, fetch });
  // The input is checked whole before the key is asked for: a bad dataset is named without a platform.
  const needKey = () => {
    if (!apiKey) throw new EvalInputError(['no API key: set AGENT_REACH_KEY (or --api-key)']);
  };
  if (values['from-runs'] !== undefined) {
    needKey();
    if (positionals.length)
      throw new EvalInputError([`--from-runs takes no dataset, got "${positionals[0]}"`]);
    const made = await datasetFromRuns(client, values['from-runs'], values.name);
    if (values.out) await writeFile(values.out, made.yaml);
    else io.out(made.yaml.trimEnd());
    io.err(
      `${made.cases} case(s) from recorded runs${made.skipped ? `, ${made.skipped} run(s) left out (not finished or no input)` : ''}${values.out ? ` written to ${values.out}` : ''}`,
    );
    return EVAL_EXIT.ok;
  }
  const [file, extra] = positionals;
  if (!file)
    throw new EvalInputError([
      'eval needs a dataset file (or --from-runs FILTER); see agent-reach eval --help',
    ]);
  if (extra) throw new EvalInputError([`eval takes one dataset, got "${extra}" too`]);
  const format = formatOf(values.format, values.out);
  const gates = [
    ...(values['fail-under'] ?? []).map((g) => parseGate('fail-under', g)),
    ...(values['max-regression'] ?? []).map((g) => parseGate('max-regression', g)),
  ];
  const repeat = integer(values.repeat, 'repeat', 1, MAX_EVAL_REPEAT);
  const concurrency = integer(
    values.concurrency,
    'concurrency',
    DEFAULT_EVAL_CONCURRENCY,
    MAX_EVAL_CONCURRENCY,
  );
  const runTimeoutMs = integer(
    values['run-timeout'],
    'run-timeout',
    DEFAULT_RUN_TIMEOUT_MS,
    MAX_RUN_TIMEOUT_MS,
  );
  const variants = await parseVariants(values.variant ?? []);
  if (gates.some((g) => g.kind === 'max-regression') && variants.length < 2)
    throw new EvalInputError(['--max-regression needs two variants or more (the first is the baseline)']);
  const dataset = await loadDataset(file, values.agent ? { agent: values.agent } : {});
  needKey();
  const total = dataset.cases.length * repeat * variants.length;
  let done = 0;
  // Ctrl-C (or a CI job's SIGTERM) stops the eval and cancels its runs in flight, instead of leaving
  // them to spend the tenant's quota for a report no one will read.
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let report: EvalReport;
  try {
    report = await runEval({
      client,
      dataset,
      variants,
      repeat,
      concurrency,
      runTimeoutMs,
      signal: stop.signal,
      onAttempt: ({ variant, case: id, attempt }) =>
        io.err(
          `[${++done}/${total}] ${variant} ${id} ${attempt.passed ? 'pass' : 'FAIL'} ${attempt.run_id}`.trimEnd(),
        ),
    });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const failures = gateFailures(report, gates);
  if (values.out) {
    await writeFile(values.out, renderReport(report, format));
    io.out(formatTable(report));
  } else io.out(renderReport(report, format).trimEnd());
  const note = (text: string) => (format === 'table' || values.out ? io.out(text) : io.err(text));
  if (!values['no-upload']) {
    try {
      const { id } = await uploadReport(baseUrl, apiKey, report, fetch);
      note(`eval ${id} stored: ${baseUrl.replace(/\/+$/, '')}/v1/evals/${id}`);
    } catch (err) {
      io.err(
        `error: the report was not stored: ${err instanceof AgentReachApiError ? `${err.code}: ` : ''}${(err as Error).message}`,
      );
      return failures.length ? EVAL_EXIT.gateFailed : EVAL_EXIT.platform;
    }
  }
  for (const f of failures) io.err(`gate failed: ${f}`);
  return failures.length ? EVAL_EXIT.gateFailed : EVAL_EXIT.ok;
}
