/**
 * `pnpm demo:eval [--task-stack] [--seed N]`: a seed documents' experiment, offline, on the whole fleet. It
 * starts the all-in-one service with the agents file and tools of examples/evals/ and llm-sim's noisy model
 * (`sim-noisy-<seed>`) as the model, runs `agent-reach eval` on a dataset with two variants, and prints
 * each variant's error rate with its 95 % interval and the difference:
 * - by default, section 4.1's "30 requests of the same kind, error rate from 35 % to 6 %": 36 city
 *   questions, the tools as first written against a variant whose descriptions name the city aliases,
 *   whose schemas show examples and whose executor maps the aliases;
 * - with `--task-stack`, section 4.2's "long-task completion from 40 % to 85 %": 30 three-step tasks,
 *   without planning (no task stack in the prompt) against with it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { wilson } from '@agent-reach/evals';
import type { EvalReport } from '@agent-reach/protocol';
import { exitWith, startDemoStack } from './demo-stack.js';

const HERE = path.dirname(new URL(import.meta.url).pathname);
const EVALS = path.join(HERE, '..', 'examples', 'evals');
/** The workspace's `agent-reach` command (it runs the CLI from its sources). */
const CLI = path.join(HERE, '..', 'packages', 'cli', 'bin', 'agent-reach.js');
/** Runs in flight at once: enough to finish in seconds, few enough for a laptop. */
const CONCURRENCY = 6;

/** One experiment: its dataset, its two variants (`NAME` or `NAME=OVERRIDES`) and the rates it prints. */
interface Experiment {
  title: string;
  dataset: string;
  variants: [string, string];
  /** What a failure of each metric is called, by metric. */
  rows: Array<[label: string, metric: string]>;
}

const ALIASES: Experiment = {
  title: 'aliases and examples (section 4.1)',
  dataset: path.join(EVALS, 'city-dataset.yaml'),
  variants: ['without_aliases', `with_aliases=${path.join(EVALS, 'with-aliases.yaml')}`],
  rows: [
    ['requests not right the first time', 'reach_success'],
    ['tool calls with invalid arguments', 'first_try_valid_args'],
  ],
};

const TASK_STACK: Experiment = {
  title: 'the task stack (section 4.2)',
  dataset: path.join(EVALS, 'long-tasks.yaml'),
  variants: ['without_task_stack={"planning":false}', 'with_task_stack={"planning":true}'],
  rows: [
    ['tasks not right (every expectation)', 'reach_success'],
    ['tasks left unfinished (task_completion)', 'task_completion'],
  ],
};

async function main(): Promise<number> {
  const experiment = process.argv.includes('--task-stack') ? TASK_STACK : ALIASES;
  const seedAt = process.argv.indexOf('--seed');
  const seed = seedAt > 0 ? Number(process.argv[seedAt + 1]) : 0;
  if (!Number.isInteger(seed) || seed < 0) {
    console.error(`--seed must be a whole number >= 0, not ${process.argv[seedAt + 1] ?? '(nothing)'}`);
    return 2;
  }
  const work = mkdtempSync(path.join(tmpdir(), 'agent-reach-demo-eval-'));
  const env: Record<string, string | undefined> = {
    ...process.env,
    AGENTS_FILE: path.join(EVALS, 'agents.yaml'),
    TOOL_MODULES: path.join(EVALS, 'city-tools.ts'),
    OUTPUTS_DIR: path.join(work, 'outputs'),
    AR_KEY_PREFIX: process.env.AR_KEY_PREFIX ?? 'ar-demo-eval',
  };
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL) env.OPENAI_MODEL = `sim-noisy-${seed}`;
  const stack = await startDemoStack(env);
  if (!stack) return 1;
  try {
    const out = path.join(work, 'report.json');
    const args = [experiment.dataset, ...experiment.variants.flatMap((v) => ['--variant', v])];
    const code = await evalCommand(
      [...args, '--concurrency', String(CONCURRENCY), '--out', out, '--url', stack.apiUrl],
      stack.apiKey,
    );
    // The report file is written before it is stored: a report the platform did not store (3) is still read.
    if (!existsSync(out)) return code === 0 ? 1 : code;
    printHeadline(experiment, JSON.parse(readFileSync(out, 'utf8')) as EvalReport, stack.model);
    console.log(`\nThe report (JSON): ${out}`);
    return code;
  } finally {
    await stack.close();
  }
}

/** Runs `agent-reach eval` (the workspace's command) with these arguments; resolves to its exit code. */
function evalCommand(args: string[], apiKey: string): Promise<number> {
  console.log(`$ agent-reach eval ${args.join(' ')} --api-key …\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'eval', ...args, '--api-key', apiKey], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const pct = (x: number) => `${(x * 100).toFixed(0)} %`;
const pts = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(0)}`;

/** One variant's rate of failures of a metric: `failed/n = r % [low, high]`. */
function errorRate(report: EvalReport, variant: string, metric: string): string {
  const v = report.variants.find((x) => x.name === variant);
  const [k, n] = v?.metrics.counts?.[metric] ?? [0, 0];
  const [low, high] = wilson(n - k, n);
  return `${n - k}/${n} = ${pct(n === 0 ? 0 : (n - k) / n)} [${pct(low)}, ${pct(high)}]`;
}

/** The seeds' kind of result: each variant's error rate with its interval, and the difference. */
function printHeadline(experiment: Experiment, report: EvalReport, model: string): void {
  const [baseline, variant] = experiment.variants.map((v) => v.split('=')[0] ?? v) as [string, string];
  const comparison = report.comparisons.find((c) => c.baseline === baseline && c.variant === variant);
  console.log(
    `\nThe seeds' experiment on ${experiment.title}, offline (${report.dataset.cases} cases, model ${model}):`,
  );
  const width = Math.max(baseline.length, variant.length) + 2;
  for (const [label, metric] of experiment.rows) {
    const d = comparison?.metrics[metric];
    console.log(`  ${label}`);
    console.log(`    ${baseline.padEnd(width)} ${errorRate(report, baseline, metric)}`);
    console.log(`    ${variant.padEnd(width)} ${errorRate(report, variant, metric)}`);
    if (d && d.low !== null && d.high !== null)
      console.log(
        `    ${'difference'.padEnd(width)} ${pts(-d.diff)} points, 95 % interval [${pts(-d.high)}, ${pts(-d.low)}]`,
      );
  }
  const flipped = comparison?.flipped ?? [];
  const fixed = flipped.filter((f) => f.to === 'pass').map((f) => f.case);
  const broken = flipped.filter((f) => f.to === 'fail').map((f) => f.case);
  console.log(`  flipped to pass: ${fixed.length ? fixed.join(', ') : 'none'}`);
  console.log(`  flipped to fail: ${broken.length ? broken.join(', ') : 'none'}`);
}

exitWith(main());
