/**
 * The main job: the seeds' example end to end. An executor and a scheduler start in this process against
 * Redis; the trip_planner agent queries Shanghai's weather, then writes a weekend plan to a markdown file.
 * With OPENAI_API_KEY set it talks to that model (OPENAI_BASE_URL / OPENAI_MODEL optional); without one it
 * plays the `weather-trip` scenario on llm-sim, the bundled OpenAI-compatible simulator.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createLogger,
  createRedis,
  loadAgents,
  loadConfig,
  waitReady,
  type ToolResult,
} from '@agent-reach/shared';
import { startExecutor } from '@agent-reach/executor';
import { AgentRunner, createLlmClient, type RunEvent } from '@agent-reach/scheduler';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TASK = process.argv[2] ?? '查一下上海天气，然后写一份周末两日游建议存成 md 文件';
const AGENT = process.env.DEMO_AGENT ?? 'trip_planner';

async function main(): Promise<number> {
  const config = loadConfig(process.env);
  const logger = createLogger('demo', { level: process.env.LOG_LEVEL ?? 'warn' });
  const redis = createRedis(config.redisUrl, 'producer');
  try {
    await waitReady(redis, config.redisUrl, 3000);
  } catch {
    console.error(`Redis does not answer at ${config.redisUrl}. Start one (redis-server) or set REDIS_URL.`);
    redis.disconnect();
    return 1;
  }

  let sim: LlmSim | undefined;
  let llm;
  if (config.llm.apiKey) {
    llm = createLlmClient({
      apiKey: config.llm.apiKey,
      model: config.llm.model ?? 'gpt-4o-mini',
      ...(config.llm.baseUrl ? { baseURL: config.llm.baseUrl } : {}),
    });
    console.log(`Model: ${llm.model} at ${config.llm.baseUrl ?? 'the OpenAI API'}`);
  } else {
    sim = await startLlmSim({ scenariosDir: path.join(ROOT, 'packages/llm-sim/scenarios') });
    llm = createLlmClient({ apiKey: 'llm-sim', baseURL: sim.url, model: 'weather-trip' });
    console.log(
      `No model configured (OPENAI_API_KEY is unset): using llm-sim, the bundled simulator, at ${sim.url}`,
    );
    console.log('  scenario "weather-trip" scripts the model; the tools, queues and executor are real.');
  }

  const executor = await startExecutor(
    { ...config, executor: { ...config.executor, metricsPort: 0 } },
    { logger },
  );
  const agents = loadAgents(path.resolve(config.agentsFile), executor.registry.names());
  const runner = await AgentRunner.start({ connection: redis, keys: executor.keys, agents, llm, logger });
  console.log(`Task for ${AGENT}: ${TASK}\n`);

  const { outcome, state } = await runner.run({ agent: AGENT, input: TASK, onEvent: print });
  if (outcome === 'parked' || outcome === 'released') throw new Error(`the run unexpectedly ${outcome}`);
  const written = state.messages
    .flatMap((m) =>
      m.role === 'tool' && typeof m.content === 'string' ? [JSON.parse(m.content) as ToolResult] : [],
    )
    .filter((r) => r.name === 'write_markdown_file' && r.ok)
    .map((r) => (r.content as { path: string }).path);

  console.log(
    `\nOutcome: ${outcome.status} (${outcome.reason}) after ${outcome.iterations} model turns, ${outcome.usage.total_tokens} tokens`,
  );
  if (outcome.answer) console.log(`Answer: ${outcome.answer}`);
  if (outcome.report) console.log(`Report: ${outcome.report}`);
  for (const file of written) console.log(`Written file: ${file}`);

  await runner.close();
  await executor.close();
  await sim?.close();
  await redis.quit();
  return outcome.status === 'succeeded' ? 0 : 2;
}

function print(event: RunEvent): void {
  switch (event.type) {
    case 'plan':
      if (event.steps.length)
        console.log(`Plan:\n${event.steps.map((s, i) => `  ${i + 1}. ${s.title}`).join('\n')}`);
      break;
    case 'llm_request':
      console.log(
        `Model turn ${event.turn}: ${event.tool_calls ? `${event.tool_calls} tool call(s)` : 'final answer'} ` +
          `(${event.latency_ms} ms, ${event.prompt_tokens}+${event.completion_tokens} tokens)`,
      );
      break;
    case 'tool_result': {
      const args = event.arguments.length > 100 ? `${event.arguments.slice(0, 100)}…` : event.arguments;
      const status = event.ok ? 'ok' : `error ${event.error?.kind}: ${event.error?.message}`;
      console.log(
        `  ${event.ok ? '✓' : '✗'} ${event.tool} ${args} → ${status} (${event.duration_ms} ms, ${event.attempts} attempt(s))`,
      );
      break;
    }
    case 'step_done':
      console.log(`  step done: ${event.step.title}`);
      break;
    case 'guard':
      console.log(`  guard ${event.guard} (${event.action}): ${event.report}`);
      break;
    case 'compaction':
      console.log(`  compacted history: ${event.before_tokens} → ${event.after_tokens} tokens`);
      break;
    default:
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
