/**
 * The main job: the whole system in one step. It starts the all-in-one service (executor, scheduler with
 * the HTTP API, and llm-sim when no model is configured) on the local Redis, then runs the seeds' example
 * through the HTTP API — query Shanghai's weather, then write a weekend plan to a markdown file —
 * printing the run's live events as the API streams them (the answer's text as the model writes it), the
 * API's address, its docs page and Bull Board.
 *
 * With `--mcp`, a second agent then reads what the first one wrote through an MCP server: the reference
 * filesystem server (`@modelcontextprotocol/server-filesystem`, installed with the project), started by
 * the executor over stdio and sandboxed to the output folder. Offline, like the rest of the demo.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createClient,
  type AgentReachClient,
  type Run,
  type StreamedAnswerDelta,
  type StreamedEvent,
} from '@agent-reach/client';
import { readConfigFile } from '@agent-reach/shared';
import type { DevStack } from '@agent-reach/cli';
import { exitWith, startDemoStack } from './demo-stack.js';

const args = process.argv.slice(2);
const MCP = args.includes('--mcp');
const TASK = args.find((a) => a !== '--mcp') ?? '查一下上海天气，然后写一份周末两日游建议存成 md 文件';
const AGENT = process.env.DEMO_AGENT ?? 'trip_planner';
/** The agent of the `--mcp` part, its tools and the llm-sim scenario that plays its model. */
const READER = 'outputs_reader';
const READER_TOOLS = ['fs__list_directory', 'fs__read_text_file'];
const READER_MODEL = 'outputs-reader';
const READER_TASK = 'List the output folder and read the first line of the weekend plan.';

async function main(): Promise<number> {
  const env: Record<string, string | undefined> = { ...process.env };
  if (MCP) withFilesystemServer(env);
  const stack = await startDemoStack(env);
  if (!stack) return 1;

  const client = createClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  const final = await runAgent(client, AGENT, TASK);
  // The file's path, from the tool result exactly as the model saw it (GET /v1/runs/:id).
  const paths = final.steps.flatMap((step) => {
    const content = step.result?.content as { path?: unknown } | undefined;
    return step.tool === 'write_markdown_file' && step.kind === 'ok' && typeof content?.path === 'string'
      ? [content.path]
      : [];
  });
  for (const file of paths) console.log(`Written file: ${file}`);
  console.log(`\nInspect it again with: pnpm exec agent-reach runs show ${final.run_id}`);
  let ok = final.status === 'succeeded' && paths.length > 0;
  if (MCP && ok) ok = await readThroughMcp(stack, client);
  await stack.close();
  return ok ? 0 : 2;
}

/**
 * `--mcp`: the agents file in force plus a tool group that mounts the reference filesystem server over
 * stdio, allowed to reach only the output folder, and an agent that may list and read through it.
 */
function withFilesystemServer(env: Record<string, string | undefined>): void {
  const agentsFile = env.AGENTS_FILE ?? 'config/agents.yaml';
  const document = readConfigFile(agentsFile, 'the agents file') as {
    agents?: unknown[];
    tool_groups?: Record<string, { mcp_servers?: unknown[] }>;
  };
  const outputs = path.resolve(env.OUTPUTS_DIR ?? 'outputs');
  // Its package has no entry point, only a bin: run that file with this Node.
  const pkg = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/package.json');
  const server = path.join(path.dirname(pkg), 'dist/index.js');
  const groups = document.tool_groups ?? {};
  const group = groups.default ?? {};
  document.tool_groups = {
    ...groups,
    default: {
      ...group,
      mcp_servers: [
        ...(group.mcp_servers ?? []),
        {
          name: 'fs',
          command: process.execPath,
          args: [server, outputs],
          allow: ['list_directory', 'read_text_file'],
        },
      ],
    },
  };
  document.agents = [
    ...(document.agents ?? []),
    {
      name: READER,
      description: 'Reads the output folder through the MCP filesystem server.',
      tools: READER_TOOLS,
      max_iterations: 4,
    },
  ];
  // JSON is YAML: the file is read like any agents file.
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agent-reach-demo-')), 'agents.yaml');
  writeFileSync(file, JSON.stringify(document, null, 2));
  env.AGENTS_FILE = file;
  // llm-sim plays the reader's model too; a configured model is left to answer both.
  if (!env.OPENAI_API_KEY && !env.OPENAI_BASE_URL)
    env.ALLOWED_MODELS ??= `${env.OPENAI_MODEL ?? 'weather-trip'},${READER_MODEL}`;
  console.log(`MCP: the reference filesystem server over stdio, sandboxed to ${outputs}\n`);
}

/** `--mcp`: once the executor announces the server's tools, the reader agent lists and reads the folder. */
async function readThroughMcp(stack: DevStack, client: AgentReachClient): Promise<boolean> {
  const until = Date.now() + 20_000;
  for (;;) {
    const catalog = await stack.scheduler.runner.catalog.refresh();
    if (READER_TOOLS.every((t) => catalog.has(t))) break;
    if (Date.now() > until) {
      console.error(
        `The MCP filesystem server's tools (${READER_TOOLS.join(', ')}) were not offered within 20 s.`,
      );
      return false;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log('');
  const final = await runAgent(client, READER, READER_TASK, stack.simUrl ? READER_MODEL : undefined);
  return final.status === 'succeeded';
}

/** Starts a run of `agent`, prints its live events, then its outcome; resolves to the finished run. */
async function runAgent(
  client: AgentReachClient,
  agent: string,
  input: string,
  model?: string,
): Promise<Run> {
  const run = await client.createRun({ agent, input, ...(model ? { model } : {}) });
  console.log(`POST /v1/runs → ${run.run_id} (${agent}): ${input}\n`);
  console.log(`Live events (GET /v1/runs/${run.run_id}/events):`);
  for await (const event of client.streamEvents(run.run_id, { answerDeltas: true })) print(event);
  const final = await client.getRun(run.run_id);
  console.log(
    `\nOutcome: ${final.status} (${final.reason}) after ${final.iterations} model turns, ${final.usage.total_tokens} tokens`,
  );
  if (final.answer) console.log(`Answer: ${final.answer}`);
  if (final.report) console.log(`Report: ${final.report}`);
  return final;
}

/** The turn and try whose text is being printed as it streams ('' when none). */
let streaming = '';

function print({ type, data }: StreamedEvent | StreamedAnswerDelta): void {
  const d = data as Record<string, any>;
  if (type === 'answer_delta') {
    if (typeof d.content !== 'string' || d.content === '') return;
    const at = `${d.turn}.${d.attempt}`;
    // A new turn, or a new try of one, starts its text on a line of its own.
    if (at !== streaming) process.stdout.write(`${streaming ? '\n' : ''}  model writing (turn ${d.turn}): `);
    streaming = at;
    process.stdout.write(d.content);
    return;
  }
  if (streaming) process.stdout.write('\n');
  streaming = '';
  switch (type) {
    case 'run_started':
      console.log(`  run started: agent ${d.agent}, model ${d.model}`);
      break;
    case 'plan':
      if (d.steps?.length)
        console.log(
          `  plan:\n${d.steps.map((s: { title: string }, i: number) => `    ${i + 1}. ${s.title}`).join('\n')}`,
        );
      break;
    case 'llm_request':
      console.log(
        `  model turn ${d.turn}: ${d.tool_calls ? `${d.tool_calls} tool call(s)` : 'final answer'} (${d.latency_ms} ms, ${d.prompt_tokens}+${d.completion_tokens} tokens)`,
      );
      break;
    case 'tool_result': {
      const args = String(d.arguments);
      const status = d.ok ? 'ok' : `error ${d.error?.kind}: ${d.error?.message}`;
      console.log(
        `    ${d.ok ? '✓' : '✗'} ${d.tool} ${args.length > 90 ? `${args.slice(0, 90)}…` : args} → ${status} (${d.duration_ms} ms, ${d.attempts} attempt(s))`,
      );
      break;
    }
    case 'step_done':
      console.log(`    step done: ${d.step?.title}`);
      break;
    case 'guard':
      console.log(`  guard ${d.guard} (${d.action}): ${d.report}`);
      break;
    case 'run_finished':
      console.log(`  run finished: ${d.outcome?.status}`);
      break;
    default:
  }
}

exitWith(main());
