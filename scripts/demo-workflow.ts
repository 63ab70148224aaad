/**
 * The second demo: a small multi-agent workflow (config/workflows.yaml's `trip_with_order_check`) through
 * the HTTP API. The weather and order nodes run in parallel as ordinary runs of their agents; the plan
 * node starts once both have answered and sees both answers. Without a model configured, llm-sim plays
 * each node (scenario `workflow-<node id>`, bundled with llm-sim), so it runs offline.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient, type StreamedWorkflowEvent } from '@agent-reach/client';
import { loadAgents, loadWorkflows } from '@agent-reach/shared';
import { exitWith, startDemoStack } from './demo-stack.js';

const WORKFLOW = 'trip_with_order_check';
const REQUEST = process.argv[2] ?? '这个周末去上海玩，顺便查一下订单 ORD-123456 到哪了';
const WORKFLOWS_FILE = 'config/workflows.yaml';

/** The shipped workflows with each node's model set to its llm-sim scenario (JSON is YAML). */
function offlineWorkflowsFile(): string {
  const agents = loadAgents(process.env.AGENTS_FILE ?? 'config/agents.yaml');
  const { workflows } = loadWorkflows(WORKFLOWS_FILE, agents.agents.keys());
  const doc = {
    workflows: [...workflows.values()].map((w) => ({
      ...w,
      nodes: w.nodes.map((n) => ({ ...n, model: `workflow-${n.id}` })),
    })),
  };
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'agent-reach-demo-')), 'workflows.yaml');
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return file;
}

async function main(): Promise<number> {
  const offline = !process.env.OPENAI_API_KEY && !process.env.OPENAI_BASE_URL;
  const file = offline ? offlineWorkflowsFile() : (process.env.WORKFLOWS_FILE ?? WORKFLOWS_FILE);
  try {
    return await demo(file);
  } finally {
    if (offline) rmSync(path.dirname(file), { recursive: true, force: true });
  }
}

async function demo(workflowsFile: string): Promise<number> {
  const stack = await startDemoStack({ ...process.env, WORKFLOWS_FILE: workflowsFile });
  if (!stack) return 1;

  const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  const started = await client.createWorkflow({ workflow: WORKFLOW, input: REQUEST });
  const id = started.workflow_id;
  console.log(`POST /v1/workflows → ${id} (${WORKFLOW}): ${REQUEST}`);
  for (const n of started.nodes)
    console.log(
      `  node ${n.id}: agent ${n.agent}${n.depends_on.length ? `, after ${n.depends_on.join(' and ')}` : ''}`,
    );
  console.log(`\nLive events (GET /v1/workflows/${id}/events):`);
  for await (const event of client.streamWorkflowEvents(id)) print(event, started.created_at);
  const final = await client.getWorkflow(id);

  console.log(
    `\nOutcome: ${final.status} (${final.reason})${final.low_confidence ? ', low_confidence' : ''}`,
  );
  for (const n of final.nodes) {
    const span =
      n.started_at !== undefined && n.finished_at !== undefined
        ? ` +${n.started_at - final.created_at} ms → +${n.finished_at - final.created_at} ms`
        : '';
    console.log(`  ${n.id.padEnd(8)} ${n.status.padEnd(10)} run ${n.run_id ?? '-'}${span}`);
  }
  if (final.output) console.log(`\nOutput:\n${final.output}`);
  if (final.report) console.log(`\nReport:\n${final.report.text}`);
  console.log(`\nInspect it again with: pnpm exec agent-reach workflows show ${id}`);
  await stack.close();
  return final.status === 'succeeded' ? 0 : 2;
}

function print({ type, data }: StreamedWorkflowEvent, start: number): void {
  const d = data as Record<string, any>;
  const t = `+${Math.max(0, d.at - start)} ms`.padStart(9);
  switch (type) {
    case 'node_started':
      console.log(`  ${t} ${d.node} started as run ${d.run_id} (agent ${d.agent}, waited ${d.waited_ms} ms)`);
      break;
    case 'node_finished':
      console.log(`  ${t} ${d.node} ${d.status}${d.low_confidence ? ' (low_confidence)' : ''}`);
      break;
    case 'watchdog_fired':
      console.log(`  ${t} watchdog: ${d.node} past ${d.timeout_ms} ms → ${d.action}`);
      break;
    case 'workflow_finished':
      console.log(`  ${t} workflow finished: ${d.outcome?.status}`);
      break;
    default:
  }
}

exitWith(main());
