/**
 * Intent classifier benchmark: accuracy on the labelled requests of test/fixtures/intents.json (Chinese
 * and English), a confusion table, the requests it gets wrong, and the model calls it saves: a run asks
 * the model for a plan only when its request is classified multi-step, where before every run did. Then
 * the same classifier on agents the demo does not have, their vocabulary derived from their tools, topics
 * and examples, the labelled requests kept in a file of their own: topic accuracy (on/off topic, as
 * `topic_policy` enforces it), intent accuracy, and whether the best-scoring tool is one the request is
 * about, each per language. Four sets: three development sets, all tuned on (test/fixtures/intent-bench,
 * which the vocabulary's rules were first tuned on; test/fixtures/intent-holdout and intent-holdout-2,
 * written as held-out sets for other domains and tuned on once their figures had been seen); and a third
 * held-out set (test/fixtures/intent-holdout-3, other domains again), written blind and never tuned on:
 * its figures are the ones to trust. It is skipped when its directory does not exist.
 *
 *   pnpm bench:intent
 *   pnpm bench:intent --dev     (the three development sets only: what tuning may look at)
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAgents, type ToolCatalogEntry } from '@agent-reach/shared';
import {
  agentVocabulary,
  buildVocabulary,
  checkTopic,
  classifyIntent,
  INTENTS,
  type Intent,
} from '@agent-reach/scheduler/internal';

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
// The demo's vocabulary: its tools' names and the examples its agents declare (config/agents.yaml).
const demo = loadAgents(path.join(ROOT, 'config/agents.yaml'));
const tools = buildVocabulary({
  tools: fixture.tools.map((name) => ({ name })),
  examples: Object.assign({}, ...[...demo.agents.values()].map((a) => a.examples ?? {})),
});
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

// Agents the demo does not have: vocabulary from tools.json + agents.yaml, labels from requests.json.
// The three development sets were all tuned on (the two former held-out sets once their figures had
// been seen); the third held-out set (other domains) was written blind and is never tuned on.
const sets: Array<[title: string, dir: string, heldOut: boolean]> = [
  ['development set, tuned on', 'test/fixtures/intent-bench', false],
  ['former held-out set (development), tuned on', 'test/fixtures/intent-holdout', false],
  ['former second held-out set (development), tuned on', 'test/fixtures/intent-holdout-2', false],
  ['third held-out set, written blind, never tuned on', 'test/fixtures/intent-holdout-3', true],
];
// While tuning, `--dev` judges the development sets alone, so the held-out figures are not seen.
const devOnly = process.argv.slice(2).includes('--dev');
for (const [title, dir, heldOut] of sets) {
  if (heldOut && devOnly) continue;
  if (!existsSync(path.join(ROOT, dir))) {
    console.log(`\n${title}: skipped (${dir} does not exist)`);
    continue;
  }
  await judgeSet(title, dir);
}

interface BenchRequest {
  agent: string;
  lang: 'zh' | 'en';
  on_topic: boolean;
  intent?: Intent;
  tools?: string[];
  input: string;
}

/** Topic, intent and best-tool accuracy on one set of agents and labelled requests, per language. */
async function judgeSet(title: string, dir: string): Promise<void> {
  const at = path.join(ROOT, dir);
  const catalog = JSON.parse(await readFile(path.join(at, 'tools.json'), 'utf8')) as {
    tools: Array<Pick<ToolCatalogEntry, 'name' | 'description' | 'parameters'>>;
  };
  const byName = new Map(catalog.tools.map((t) => [t.name, t as ToolCatalogEntry]));
  const benchAgents = loadAgents(path.join(at, 'agents.yaml'), byName.keys());
  const labelled = JSON.parse(await readFile(path.join(at, 'requests.json'), 'utf8')) as {
    requests: BenchRequest[];
  };
  // The set's agents are one fleet: its catalog lists every tool of theirs.
  const fleet = { get: (name: string) => byName.get(name), names: () => byName.keys() };
  const vocabularies = new Map(
    [...benchAgents.agents.values()].map((a) => [
      a.name,
      { agent: a, vocabulary: agentVocabulary(a, fleet) },
    ]),
  );
  const judged = labelled.requests.map((r) => {
    const { agent, vocabulary } = vocabularies.get(r.agent) ?? { agent: undefined, vocabulary: undefined };
    if (!agent || !vocabulary) throw new Error(`${dir}/requests.json: unknown agent "${r.agent}"`);
    const topic = checkTopic(agent, vocabulary, r.input);
    const best = vocabulary.score(r.input).labels.find((l) => l.kind === 'tool');
    return {
      ...r,
      onTopic: topic?.verdict !== 'off_topic',
      score: topic?.score ?? 0,
      intentGot: classifyIntent(r.input, vocabulary).intent,
      bestTool: best?.label,
    };
  });
  type Judged = (typeof judged)[number];
  const measures: Array<[string, (r: Judged) => boolean, (r: Judged) => boolean]> = [
    ['topic (on/off)', () => true, (r) => r.onTopic === r.on_topic],
    ['intent (on-topic)', (r) => r.on_topic && r.intent !== undefined, (r) => r.intentGot === r.intent],
    [
      'best tool named',
      (r) => r.on_topic && (r.tools?.length ?? 0) > 0,
      (r) => r.bestTool !== undefined && (r.tools ?? []).includes(r.bestTool),
    ],
  ];
  console.log(
    `\n${title}: agents the demo does not have (${vocabularies.size}: ${[...vocabularies.keys()].join(', ')}), ` +
      `${judged.length} labelled requests (${dir}/requests.json)`,
  );
  console.log(`  ${''.padEnd(20)}${'all'.padStart(18)}${'zh'.padStart(18)}${'en'.padStart(18)}`);
  for (const [name, counts, right] of measures) {
    const cell = (rs: Judged[]) => {
      const of = rs.filter(counts);
      const ok = of.filter(right).length;
      return `${pct(ok, of.length)} (${ok}/${of.length})`.padStart(18);
    };
    const byLang = (lang: 'zh' | 'en') => judged.filter((r) => r.lang === lang);
    console.log(`  ${name.padEnd(20)}${cell(judged)}${cell(byLang('zh'))}${cell(byLang('en'))}`);
  }
  const onTopic = judged.filter((r) => r.on_topic);
  const offTopic = judged.filter((r) => !r.on_topic);
  console.log(
    `  off-topic requests refused: ${offTopic.filter((r) => !r.onTopic).length}/${offTopic.length}; ` +
      `on-topic requests refused: ${onTopic.filter((r) => !r.onTopic).length}/${onTopic.length}`,
  );
  const wrong = judged.filter(
    (r) =>
      r.onTopic !== r.on_topic ||
      (r.on_topic && r.intent !== undefined && r.intentGot !== r.intent) ||
      (r.on_topic && r.tools?.length && !(r.bestTool && r.tools.includes(r.bestTool))),
  );
  if (wrong.length === 0) return;
  console.log('\n  misjudged (topic label -> got, score; intent label -> got; tool labels -> best):');
  for (const r of wrong) {
    const tool = r.tools?.length ? `; ${r.tools.join('|')} -> ${r.bestTool ?? 'none'}` : '';
    console.log(
      `    [${r.agent} ${r.lang}] ${r.on_topic ? 'on' : 'off'} -> ${r.onTopic ? 'on' : 'off'} (${r.score})` +
        `${r.intent ? `; ${r.intent} -> ${r.intentGot}` : ''}${tool}: ${JSON.stringify(r.input)}`,
    );
  }
}
