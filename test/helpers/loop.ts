import { createLogger, loadAgents } from '@agent-reach/shared';
import { startLlmSim, type Scenario } from '@agent-reach/llm-sim';
import { createLlmClient, type RunEvent, type RunState } from '@agent-reach/scheduler';
import { AgentRunner, type LoopLimits } from '@agent-reach/scheduler/internal';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { recordingCheckpoint } from './ledger.js';
import { startPlatform } from './platform.js';
import { TEST_AGENTS } from './processes.js';

/** llm-sim + an in-process executor + an agent runner, all on a key prefix of their own. */
export async function startLoopHarness(
  env: Record<string, string> = {},
  limits: Partial<LoopLimits> = {},
  platformOptions: Parameters<typeof startPlatform>[1] = {},
) {
  const platform = await startPlatform(env, platformOptions);
  const sim = await startLlmSim({ scenarios: [] });
  const logger = createLogger('test', { level: 'silent' });
  const agents = loadAgents(env.AGENTS_FILE ?? TEST_AGENTS);
  const runners = new Map<string, AgentRunner>();
  const runnerFor = async (model: string) => {
    let r = runners.get(model);
    if (!r) {
      const llm = createLlmClient({
        apiKey: 'test',
        baseURL: sim.url,
        model,
        maxRetries: 4,
        timeoutMs: 5000,
      });
      r = await AgentRunner.start({
        connection: platform.producer,
        keys: platform.keys,
        agents,
        llm,
        logger,
        limits,
      });
      runners.set(model, r);
    }
    return r;
  };
  const recordRun = recordingCheckpoint(platform.producer, platform.keys);
  /** Runs `input` for `agent` against scenario `scenario` (added to the simulator first). */
  const run = async (
    scenario: Scenario,
    opts: {
      input?: string;
      agent?: string;
      limits?: Partial<LoopLimits>;
      signal?: AbortSignal;
      deadlineMs?: number;
      /** What a session carries into the run (see the run worker). */
      session?: Pick<RunState, 'messages' | 'summary'> & { steps?: RunState['plan']['steps'] };
    } = {},
  ): Promise<{ state: RunState; events: RunEvent[]; outcome: RunState['outcome'] & object }> => {
    sim.addScenario(scenario);
    const runner = await runnerFor(scenario.name);
    const events: RunEvent[] = [];
    const { outcome, state } = await runner.run({
      agent: opts.agent ?? 'test_agent',
      input: opts.input ?? `do the ${scenario.name} task`,
      onEvent: (e) => events.push(e),
      checkpoint: recordRun,
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.deadlineMs ? { deadlineMs: opts.deadlineMs } : {}),
      ...(opts.session
        ? {
            history: opts.session.messages,
            ...(opts.session.summary ? { summary: opts.session.summary } : {}),
            ...(opts.session.steps ? { steps: opts.session.steps } : {}),
          }
        : {}),
    });
    if (outcome === 'parked' || outcome === 'released') throw new Error(`the run ${outcome}`);
    return { outcome, state, events };
  };
  /** The chat requests the simulator received for a scenario, planning requests excluded. */
  const turns = (scenario: string) =>
    sim.requests
      .filter((r) => r.scenario === scenario && !(r.body as { response_format?: unknown }).response_format)
      .map((r) => ({ ...r, body: r.body as ChatCompletionCreateParams }));
  return {
    platform,
    sim,
    run,
    turns,
    async close() {
      for (const r of runners.values()) await r.close();
      await sim.close();
      await platform.close();
    },
  };
}

/** Parsed tool messages of a request. */
export function toolMessages(body: ChatCompletionCreateParams) {
  return body.messages.flatMap((m) =>
    m.role === 'tool'
      ? [{ id: m.tool_call_id, result: JSON.parse(m.content as string) as Record<string, any> }]
      : [],
  );
}

export function systemText(body: ChatCompletionCreateParams): string {
  const first = body.messages[0];
  return first?.role === 'system' ? String(first.content) : '';
}
