import path from 'node:path';
import type { Scenario } from '@agent-reach/llm-sim';
import { ROOT } from './processes.js';

export const WORKFLOWS_FIXTURE = path.join(ROOT, 'test/fixtures/workflows-test.yaml');

/** The node models of the test workflows: b and c answer slowly, so that running both at once shows. */
export const WORKFLOW_SCENARIOS: Scenario[] = [
  { name: 'wf-a', turns: [{ content: 'a found 12 crates' }] },
  { name: 'wf-b', latency_ms: 800, turns: [{ content: 'b saw [{{ user }}]' }] },
  { name: 'wf-c', latency_ms: 800, turns: [{ content: 'c saw [{{ user }}]' }] },
  { name: 'wf-d', turns: [{ content: 'd saw [{{ user }}]' }] },
  // Answers long after any test's node timeout (the simulator cuts it short when it closes).
  { name: 'wf-never', latency_ms: 600_000, turns: [{ content: 'too late' }] },
];

/** The models the test workflows name, as ALLOWED_MODELS (config check and apply refuse any other). */
export const WORKFLOW_MODELS = ['echo', ...WORKFLOW_SCENARIOS.map((s) => s.name)].join(',');
