import type { ChatCompletion } from 'openai/resources/chat/completions';
import { AgentReachError } from '@agent-reach/shared';
import type { AgentRunner } from '../agent-runner.js';
import type { RunEvent } from '../agent-loop/events.js';
import type { RunOutcome, RunState } from '../agent-loop/run-state.js';
import type { LlmClient } from '../llm.js';
import type { RunStore } from './run-store.js';

/** A tool call whose result today differs from the recorded one. */
export interface ReplayDifference {
  toolCallId: string;
  tool: string;
  recorded: { ok: boolean; kind?: string };
  replayed: { ok: boolean; kind?: string } | undefined;
}

export interface ReplayResult {
  runId: string;
  originalRunId: string;
  outcome: RunOutcome | 'parked' | 'released';
  recordedOutcome: RunOutcome | undefined;
  differences: ReplayDifference[];
}

/**
 * An LLM client that answers with a run's recorded model turns, in order (and its recorded plan), so a
 * run can be re-run without a model. Asking past the recording is an error, as a model outage would be.
 */
export function recordedLlm(events: RunEvent[], model = 'replay'): LlmClient {
  const turns = events.flatMap((e) => (e.type === 'llm_request' ? [e] : []));
  const plan = events.find((e) => e.type === 'plan');
  let next = 0;
  const completion = (
    content: string | null,
    calls: Array<{ id: string; name: string; arguments: string }> | undefined,
    finish: string,
  ): ChatCompletion => ({
    id: `replay-${next}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: finish as ChatCompletion['choices'][number]['finish_reason'],
        message: {
          role: 'assistant',
          content,
          refusal: null,
          ...(calls?.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  });
  return {
    model,
    async complete() {
      const turn = turns[next];
      next += 1;
      if (!turn) throw new AgentReachError('TOOL_FAILED', 'the recording has no more model turns');
      return completion(turn.message.content, turn.message.tool_calls, turn.finish_reason);
    },
    async completeJson() {
      const steps =
        plan?.type === 'plan'
          ? plan.steps.map((s) => ({ title: s.title, ...(s.tool ? { tool: s.tool } : {}) }))
          : [];
      return completion(JSON.stringify({ steps }), undefined, 'stop');
    },
  };
}

/**
 * Re-runs a recorded run with its recorded model turns against today's tools, as a new run recorded like
 * any other, and reports the tool calls whose outcome changed. Decisions people made are replayed too.
 */
export async function replayRun(
  originalRunId: string,
  deps: { runner: AgentRunner; store: RunStore },
): Promise<ReplayResult> {
  const { state: original } = await deps.store.load(originalRunId);
  if (!original) throw new AgentReachError('RUN_NOT_FOUND', `unknown run ${originalRunId}`);
  const events = (await deps.store.events(originalRunId)).map((e) => e.event);
  const runId = `${originalRunId}.replay-${Date.now()}`;
  const state: RunState = deps.runner.newState({
    agent: original.agent,
    input: original.input,
    runId,
    metadata: { ...original.metadata, replay_of: originalRunId },
  });
  for (const e of events) {
    if (e.type === 'approval_decided') {
      state.approvals[e.toolCallId] = {
        toolCallId: e.toolCallId,
        tool: e.tool,
        arguments: '',
        requestedAt: e.at,
        decision: e.decision,
        ...(e.by ? { by: e.by } : {}),
        ...(e.reason ? { reason: e.reason } : {}),
        decidedAt: e.at,
      };
    }
  }
  const { writer } = await deps.store.claim(runId);
  const outcome = await deps.runner.resume(state, {
    llm: recordedLlm(events),
    limits: { planning: events.some((e) => e.type === 'plan') },
    checkpoint: (s, evs) => {
      const send = writer.prepare(s, evs);
      return async () => {
        await send();
      };
    },
  });
  const recorded = events.flatMap((e) => (e.type === 'tool_result' ? [e] : []));
  const now = new Map(state.steps.map((s) => [s.toolCallId, s]));
  const differences = recorded.flatMap((r): ReplayDifference[] => {
    const step = now.get(r.toolCallId);
    const replayed = step ? { ok: step.ok, ...(step.errorKind ? { kind: step.errorKind } : {}) } : undefined;
    const before = { ok: r.ok, ...(r.error?.kind ? { kind: r.error.kind } : {}) };
    return replayed && replayed.ok === before.ok && replayed.kind === before.kind
      ? []
      : [{ toolCallId: r.toolCallId, tool: r.tool, recorded: before, replayed }];
  });
  return { runId, originalRunId, outcome, recordedOutcome: original.outcome, differences };
}
