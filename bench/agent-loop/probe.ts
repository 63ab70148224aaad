import type { LlmClient, RunEvent } from '@agent-reach/scheduler';
import { TOOL_STEPS } from './task.js';

/** One LLM request as the loop's client saw it. */
interface LlmCall {
  kind: 'plan' | 'turn';
  startedAt: number;
  endedAt: number;
  requestId?: string;
}

/** Timestamps (performance.now, ms) of one run, taken as the loop emits its events and calls the LLM. */
export class RunProbe {
  readonly llm: LlmCall[] = [];
  startedAt = performance.now();
  /** The run's id, when the run has a record in Redis. */
  runId: string | undefined;
  planAt = Number.NaN;
  finishedAt = Number.NaN;
  /** By turn (1-based): when the turn's calls were dispatched, when its last result arrived, tool time. */
  readonly dispatchedAt: number[] = [];
  readonly resultAt: number[] = [];
  readonly toolMs: number[] = [];

  constructor(readonly input: string) {}

  /** For `onEvent`: it is called synchronously at each emit, so the timestamps are the loop's own. */
  readonly onEvent = (event: RunEvent): void => {
    const now = performance.now();
    switch (event.type) {
      case 'plan':
        this.planAt = now;
        break;
      case 'tool_dispatched':
        this.dispatchedAt[event.turn] = now;
        break;
      case 'tool_result':
        this.resultAt[event.turn] = now;
        this.toolMs[event.turn] = (this.toolMs[event.turn] ?? 0) + event.duration_ms;
        break;
      case 'run_finished':
        this.finishedAt = now;
        break;
      default:
        break;
    }
  };
}

/**
 * Wraps the loop's LLM client to time each request from the caller's side and keep its request id. The
 * run is found by its input (unique per run), so no AsyncLocalStorage (and its promise hooks) is needed.
 */
export function instrumentLlm(inner: LlmClient, probes: Map<string, RunProbe>): LlmClient {
  const probeOf = (messages: Parameters<LlmClient['complete']>[0]) => {
    const user = messages.find((m) => m.role === 'user');
    return typeof user?.content === 'string' ? probes.get(user.content) : undefined;
  };
  const timed = async <T extends object>(
    probe: RunProbe | undefined,
    kind: LlmCall['kind'],
    request: () => Promise<T>,
  ) => {
    const startedAt = performance.now();
    const res = await request();
    const requestId = (res as { _request_id?: string | null })._request_id ?? undefined;
    probe?.llm.push({ kind, startedAt, endedAt: performance.now(), ...(requestId ? { requestId } : {}) });
    return res;
  };
  return {
    model: inner.model,
    complete: (messages, tools, signal, onDelta, options) =>
      timed(probeOf(messages), 'turn', () => inner.complete(messages, tools, signal, onDelta, options)),
    completeJson: (messages, signal) =>
      timed(probeOf(messages), 'plan', () => inner.completeJson(messages, signal)),
  };
}

/**
 * One tool step, k = 1..3: from the end of the previous step (the `plan` event for k = 1, else the last
 * `tool_result` of turn k−1) to the last `tool_result` of turn k. It holds the checkpoint of the previous
 * step, the breaker read and prompt building (`pre`), the model turn (`llm`), the `llm_request` emit and
 * its checkpoint (`post`), and the dispatch round trip including the tool (`dispatch` + `tool`).
 */
export interface StepSample {
  wallMs: number;
  /** LLM request as the client saw it (openai SDK + HTTP + simulator). */
  llmClientMs: number;
  /** The simulator's own handling time (NaN if it could not be matched). */
  llmSimMs: number;
  toolMs: number;
  preMs: number;
  postMs: number;
  /** Dispatch round trip minus the tool's own time. */
  dispatchMs: number;
}

/** The steps of a finished run; throws if the run did not go through exactly the expected turns. */
export function stepsOf(probe: RunProbe, simHandledMs: ReadonlyMap<string, number>): StepSample[] {
  const turns = probe.llm.filter((c) => c.kind === 'turn');
  if (turns.length !== TOOL_STEPS + 1 || Number.isNaN(probe.planAt)) {
    throw new Error(`run "${probe.input}" made ${turns.length} model turns (want ${TOOL_STEPS + 1})`);
  }
  const steps: StepSample[] = [];
  for (let k = 1; k <= TOOL_STEPS; k += 1) {
    const from = k === 1 ? probe.planAt : probe.resultAt[k - 1];
    const to = probe.resultAt[k];
    const dispatched = probe.dispatchedAt[k];
    const llm = turns[k - 1];
    if (from === undefined || to === undefined || dispatched === undefined || !llm) {
      throw new Error(`run "${probe.input}" is missing events of turn ${k}`);
    }
    const toolMs = probe.toolMs[k] ?? 0;
    steps.push({
      wallMs: to - from,
      llmClientMs: llm.endedAt - llm.startedAt,
      llmSimMs: (llm.requestId === undefined ? undefined : simHandledMs.get(llm.requestId)) ?? Number.NaN,
      toolMs,
      preMs: llm.startedAt - from,
      postMs: dispatched - llm.endedAt,
      dispatchMs: to - dispatched - toolMs,
    });
  }
  return steps;
}
