/**
 * Intent classifier benchmark: accuracy on the labelled requests of test/fixtures/intents.json (Chinese
 * and English), a confusion table, the requests it gets wrong, and the model calls it saves: a run asks
 * the model for a plan only when its request is classified multi-step, where before every run did.
 *
 *   pnpm bench:intent
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAgents } from '@agent-reach/shared';
import { classifyIntent, INTENTS, type Intent } from '@agent-reach/scheduler';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Labelled {
  lang: 'zh' | 'en';
  intent: Intent;
  input: string;
}

const fixture = JSON.parse(await readFile(path.join(ROOT, 'test/fixtures/intents.json'), 'utf8')) as {
  tools: string[];
  requests: Labelled[];
};
const tools = fixture.tools.map((name) => ({ name }));
const results = fixture.requests.map((r) => ({ ...r, got: classifyIntent(r.input, tools).intent }));

const pct = (n: number, of: number) => `${((100 * n) / Math.max(1, of)).toFixed(1)}%`;
const correct = (rs: typeof results) => rs.filter((r) => r.got === r.intent).length;
console.log(`intent classifier on ${results.length} labelled requests (test/fixtures/intents.json)\n`);
console.log(
  `accuracy: ${pct(correct(results), results.length)} (${correct(results)}/${results.length}), target >= 90%`,
);
for (const lang of ['zh', 'en'] as const) {
  const rs = results.filter((r) => r.lang === lang);
  console.log(`  ${lang}: ${pct(correct(rs), rs.length)} (${correct(rs)}/${rs.length})`);
}

console.log('\nconfusion (rows: label, columns: classified)');
const width = Math.max(...INTENTS.map((i) => i.length)) + 2;
console.log(['label \\ got'.padEnd(width + 2), ...INTENTS.map((i) => i.padStart(width))].join(''));
for (const label of INTENTS) {
  const row = INTENTS.map((got) =>
    String(results.filter((r) => r.intent === label && r.got === got).length).padStart(width),
  );
  console.log([label.padEnd(width + 2), ...row].join(''));
}

const wrong = results.filter((r) => r.got !== r.intent);
if (wrong.length > 0) {
  console.log('\nmisclassified:');
  for (const r of wrong) console.log(`  [${r.lang}] ${r.intent} -> ${r.got}: ${JSON.stringify(r.input)}`);
}

// The acceptance workload (test/acceptance.test.ts): 100 runs of `test_agent` on one five-step task.
const agents = loadAgents(path.join(ROOT, 'test/fixtures/agents.yaml'));
const testAgentTools = (agents.agents.get('test_agent')?.tools ?? []).map((name) => ({ name }));
const workloads = [
  {
    name: 'acceptance (100 five-step tasks)',
    inputs: Array.from(
      { length: 100 },
      (_, i) => `task #${i}: check two cities, one order, then write the report`,
    ),
    tools: testAgentTools,
  },
  { name: `the labelled requests (${results.length})`, inputs: results.map((r) => r.input), tools },
];
console.log('\nplan calls (one extra model call each) before (every run) and after (multi-step runs only)');
for (const w of workloads) {
  const after = w.inputs.filter((input) => classifyIntent(input, w.tools).intent === 'multi_step').length;
  const before = w.inputs.length;
  console.log(
    `  ${w.name}: before ${before}, after ${after}, saved ${before - after} (${pct(before - after, before)})`,
  );
}
