/**
 * Fallback benchmark: what a turn whose first model's provider is dead costs beyond the same turn on a
 * live provider, through the scheduler's model providers (`ModelProviders`, real HTTP to llm-sim through
 * the `openai` SDK). Two dead providers: one whose port refuses connections (a killed process), one that
 * accepts and never answers (a hung process, given up at its `timeout_ms`). Both keep the default
 * `max_retries`, as an operator who never set it would.
 *
 * Per configuration, TURNS turns one after another; the figure is the median turn's wall time, and the
 * extra time of a dead first provider is its median minus the live one's. Target: at most one provider
 * timeout plus 10 % (docs/providers.md). Prints the figures and writes bench/results/fallback.json.
 *
 *   pnpm bench:fallback
 *     BENCH_FALLBACK_TURNS (default 20)       turns per configuration with a refusing provider, and live
 *     BENCH_FALLBACK_HUNG_TURNS (default 5)   turns with a hung provider
 *     BENCH_FALLBACK_TIMEOUT_MS (default 1000) the dead providers' timeout_ms
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { Registry } from 'prom-client';
import { startLlmSim } from '@agent-reach/llm-sim';
import { constants, createLogger, loadConfig, parseProviders } from '@agent-reach/shared';
import { createLlmClient } from '@agent-reach/scheduler';
import { createProviderMetrics, ModelProviders } from '@agent-reach/scheduler/internal';
import { median } from './measure.js';
import { envInt } from './env.js';
import { formatTarget, target } from './targets.js';

const TURNS = envInt('BENCH_FALLBACK_TURNS', 20, 1);
const HUNG_TURNS = envInt('BENCH_FALLBACK_HUNG_TURNS', 5, 1);
const TIMEOUT_MS = envInt('BENCH_FALLBACK_TIMEOUT_MS', 1000, 50);

const live = await startLlmSim({ scenarios: [{ name: 'm', turns: [{ content: 'live', repeat: true }] }] });
const hung = await startLlmSim({
  scenarios: [{ name: 'm', turns: [{ content: 'never', fault: { type: 'hang', times: 1_000_000 } }] }],
});
const killed = await startLlmSim({ scenarios: [] });
const refusingUrl = killed.url;
await killed.close();

const dead = (name: string, url: string) => ({
  name,
  base_url: url,
  timeout_ms: TIMEOUT_MS,
  // Never opened: every turn of the benchmark asks the dead provider first, as the first turn after a
  // provider dies does.
  breaker: { failures: 1_000_000 },
  models: ['m'],
});
const file = parseProviders(
  JSON.stringify({
    providers: [
      { name: 'live', base_url: live.url, models: ['m'] },
      dead('refusing', refusingUrl),
      dead('hung', hung.url),
    ],
  }),
  'bench providers',
);
const config = loadConfig({ OPENAI_BASE_URL: live.url, OPENAI_API_KEY: 'bench', OPENAI_MODEL: 'm' });
const providers = new ModelProviders({
  config,
  file,
  defaultClient: (model) => createLlmClient({ baseURL: live.url, apiKey: 'bench', model }),
  logger: createLogger('bench', { level: 'silent' }),
  metrics: createProviderMetrics(new Registry()),
});

/** The median wall time of `turns` turns asking `models` in order, in ms. */
async function medianTurnMs(models: string[], turns: number): Promise<number> {
  const client = providers.clientFor(models);
  const times: number[] = [];
  for (let i = 0; i < turns; i += 1) {
    const started = performance.now();
    const res = await client.complete([{ role: 'user', content: `turn ${i}` }], []);
    times.push(performance.now() - started);
    if (res.choices[0]?.message.content !== 'live') throw new Error('the live provider did not answer');
  }
  return median(times);
}

// One warm-up turn per configuration: connection set-up is not what is measured.
for (const chain of [['live/m'], ['refusing/m', 'live/m'], ['hung/m', 'live/m']])
  await medianTurnMs(chain, 1);
const liveMs = await medianTurnMs(['live/m'], TURNS);
const refusingMs = await medianTurnMs(['refusing/m', 'live/m'], TURNS);
const hungMs = await medianTurnMs(['hung/m', 'live/m'], HUNG_TURNS);
const liveAgainMs = await medianTurnMs(['live/m'], TURNS);
const base = (liveMs + liveAgainMs) / 2;

const limit = TIMEOUT_MS * 1.1;
console.log(
  `fallback: ${TURNS} turns per configuration (${HUNG_TURNS} with a hung provider), dead providers' timeout_ms ${TIMEOUT_MS}, max_retries ${constants.DEFAULT_LLM_MAX_RETRIES} (the default)`,
);
console.log(`  live provider                    median turn ${base.toFixed(1)} ms`);
console.log(`  refusing provider, then live     median turn ${refusingMs.toFixed(1)} ms`);
console.log(`  hung provider, then live         median turn ${hungMs.toFixed(1)} ms`);
const targets = [
  target('extra time, refused connection then fallback', refusingMs - base, '<=', limit, 'ms'),
  target('extra time, hung provider then fallback', hungMs - base, '<=', limit, 'ms'),
];
for (const t of targets) console.log(formatTarget(t));
await mkdir('bench/results', { recursive: true });
const report = {
  environment: { node: process.version, cpus: os.cpus().length, loadAvg1m: os.loadavg()[0] },
  settings: { turns: TURNS, hungTurns: HUNG_TURNS, timeoutMs: TIMEOUT_MS },
  medianTurnMs: { live: base, refusingThenLive: refusingMs, hungThenLive: hungMs },
  targets,
};
await writeFile('bench/results/fallback.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('wrote bench/results/fallback.json');
providers.close();
await Promise.all([live.close(), hung.close()]);
