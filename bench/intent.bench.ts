/**
 * Intent classifier benchmark: accuracy on the labelled requests of test/fixtures/intents.json (Chinese
 * and English), a confusion table, the requests it gets wrong, and the model calls it saves: a run asks
 * the model for a plan only when its request is classified multi-step, where before every run did. Then
 * the same classifier on agents the demo does not have (test/fixtures/intent-bench: an HR, a DevOps and
 * a billing agent, their vocabulary derived from their tools, topics and examples; the labelled requests
 * kept in a file of their own): topic accuracy (on/off topic, as `topic_policy` enforces it), intent
 * accuracy, and whether the best-scoring tool is one the request is about.
 *
 *   pnpm bench:intent
 */
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
const BENCH = path.join(ROOT, 'test/fixtures/intent-bench');
const catalog = JSON.parse(await readFile(path.join(BENCH, 'tools.json'), 'utf8')) as {
  tools: Array<Pick<ToolCatalogEntry, 'name' | 'description' | 'parameters'>>;
};
const byName = new Map(catalog.tools.map((t) => [t.name, t as ToolCatalogEntry]));
const benchAgents = loadAgents(path.join(BENCH, 'agents.yaml'), byName.keys());
const labelled = JSON.parse(await readFile(path.join(BENCH, 'requests.json'), 'utf8')) as {
  requests: Array<{
    agent: string;
    lang: 'zh' | 'en';
    on_topic: boolean;
    intent?: Intent;
    tools?: string[];
    input: string;
  }>;
};
const vocabularies = new Map(
  [...benchAgents.agents.values()].map((a) => [a.name, { agent: a, vocabulary: agentVocabulary(a, byName) }]),
);
const judged = labelled.requests.map((r) => {
  const { agent, vocabulary } = vocabularies.get(r.agent) ?? { agent: undefined, vocabulary: undefined };
  if (!agent || !vocabulary) throw new Error(`requests.json: unknown agent "${r.agent}"`);
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
const onTopic = judged.filter((r) => r.on_topic);
const withIntent = onTopic.filter((r) => r.intent !== undefined);
const withTool = onTopic.filter((r) => r.tools?.length);
const topicRight = judged.filter((r) => r.onTopic === r.on_topic);
const intentRight = withIntent.filter((r) => r.intentGot === r.intent);
const toolRight = withTool.filter((r) => r.bestTool !== undefined && r.tools?.includes(r.bestTool));
console.log(
  `\nagents the demo does not have (${vocabularies.size}: ${[...vocabularies.keys()].join(', ')}), ` +
    `${judged.length} labelled requests (test/fixtures/intent-bench/requests.json)`,
);
console.log(
  `  topic (on/off):   ${pct(topicRight.length, judged.length)} (${topicRight.length}/${judged.length})`,
);
for (const lang of ['zh', 'en'] as const) {
  const rs = judged.filter((r) => r.lang === lang);
  const right = rs.filter((r) => r.onTopic === r.on_topic).length;
  console.log(`    ${lang}: ${pct(right, rs.length)} (${right}/${rs.length})`);
}
const offTopic = judged.filter((r) => !r.on_topic);
const refused = offTopic.filter((r) => !r.onTopic).length;
const wronglyRefused = onTopic.filter((r) => !r.onTopic).length;
console.log(
  `    off-topic requests refused: ${refused}/${offTopic.length}; on-topic requests refused: ${wronglyRefused}/${onTopic.length}`,
);
console.log(
  `  intent (on-topic): ${pct(intentRight.length, withIntent.length)} (${intentRight.length}/${withIntent.length})`,
);
console.log(
  `  best tool named:   ${pct(toolRight.length, withTool.length)} (${toolRight.length}/${withTool.length})`,
);
const benchWrong = judged.filter(
  (r) => r.onTopic !== r.on_topic || (r.intent !== undefined && r.intentGot !== r.intent),
);
if (benchWrong.length > 0) {
  console.log('\n  misjudged (topic label -> got, score; intent label -> got):');
  for (const r of benchWrong) {
    console.log(
      `    [${r.agent} ${r.lang}] ${r.on_topic ? 'on' : 'off'} -> ${r.onTopic ? 'on' : 'off'} (${r.score})` +
        `${r.intent ? `; ${r.intent} -> ${r.intentGot}` : ''}: ${JSON.stringify(r.input)}`,
    );
  }
}
