import { modelNotFound, rateLimited, serverError, type ErrorReply } from './api-errors.js';
import { buildCompletion, type Answer, type ChatCompletionBody, type SentToolCall } from './completion.js';
import {
  CONVERSATION_HEADER,
  DEFAULT_RETRY_AFTER_S,
  DEFAULT_SERVER_ERROR_STATUS,
  DEFAULT_STREAM_FAULT_AFTER_CHUNKS,
  FINAL_CONTENT,
  NOISY_MODEL,
  NOISY_MODEL_PATTERN,
  SCENARIO_HEADER,
} from './constants.js';
import {
  conversationKey,
  isPlanRequest,
  toolCallId,
  templateContext,
  turnIndex,
  type TemplateContext,
} from './conversation.js';
import {
  corruptJson,
  FaultCounters,
  nearMissName,
  padContent,
  planFaults,
  type FaultPlan,
} from './faults.js';
import { noisyAnswer, noisyPlan } from './noisy-model.js';
import { randomAnswer } from './random-answers.js';
import { validateChatRequest, type ChatRequest } from './request-validation.js';
import { resolveTemplates, resolveText } from './templates.js';
import { completionChunks, type ChatCompletionChunkBody } from './stream-chunks.js';
import type { AppliedFault, NoisyMistake, Scenario, ScenarioTurn, StreamFault } from './types.js';

/** What the server must do with a request. */
export type ChatAction =
  | { kind: 'reply'; status: number; body: unknown; headers?: Record<string, string> }
  | {
      kind: 'stream';
      /** The completion the chunks add up to (what is recorded). */
      body: unknown;
      chunks: ChatCompletionChunkBody[];
      /** Break the stream after `afterChunks` chunks. */
      fault?: { type: StreamFault['type']; afterChunks: number };
    }
  | { kind: 'connection_reset' }
  | { kind: 'hang' };

/** The decision for one chat-completions request, plus what to record about it. */
export interface ChatResult {
  action: ChatAction;
  /** Wait this long before acting, in milliseconds. */
  delayMs: number;
  scenario: string | null;
  turn: number | null;
  faults: AppliedFault[];
  warnings: string[];
  /** Mistakes the noisy model made in this answer. */
  mistakes?: NoisyMistake[];
}

/** Scenarios and fault counters shared by all requests of one simulator. */
export interface SimState {
  scenarios: Map<string, Scenario>;
  counters: FaultCounters;
}

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A result that answers with the given error and records no scenario or turn. */
export function rejected(error: ErrorReply, scenario: string | null = null): ChatResult {
  const action: ChatAction = { kind: 'reply', status: error.status, body: error.body };
  return { action, delayMs: 0, scenario, turn: null, faults: [], warnings: [] };
}

function selectScenario(state: SimState, request: ChatRequest, headers: Headers): Scenario | ErrorReply {
  const known = [...state.scenarios.keys(), `${NOISY_MODEL}, ${NOISY_MODEL}-<seed of 1-15 digits>`].join(
    ', ',
  );
  const named = header(headers, SCENARIO_HEADER);
  if (named !== undefined) {
    return (
      state.scenarios.get(named) ??
      modelNotFound(
        `The scenario '${named}' named by the ${SCENARIO_HEADER} header does not exist (known: ${known}).`,
      )
    );
  }
  return (
    state.scenarios.get(request.model) ??
    builtInNoisy(request.model) ??
    modelNotFound(
      `The model '${request.model}' does not exist or you do not have access to it (known: ${known}).`,
    )
  );
}

/** `sim-noisy` and `sim-noisy-<seed>`: the noisy model with its default rates, when no scenario has the name. */
export function builtInNoisy(model: string): Scenario | undefined {
  const match = NOISY_MODEL_PATTERN.exec(model);
  if (match === null) return undefined;
  return { name: model, turns: [], noisy: { seed: Number(match[1] ?? 0) } };
}

function transportAction(plan: FaultPlan, model: string): ChatAction | undefined {
  const fault = plan.transport;
  if (fault === undefined) return undefined;
  if (fault.type === 'connection_reset' || fault.type === 'hang') return { kind: fault.type };
  const error =
    fault.type === 'rate_limit'
      ? rateLimited(model, fault.retry_after_s ?? DEFAULT_RETRY_AFTER_S)
      : serverError(fault.status ?? DEFAULT_SERVER_ERROR_STATUS);
  return { kind: 'reply', status: error.status, body: error.body, headers: error.headers ?? {} };
}

interface TurnInput {
  turn: ScenarioTurn | undefined;
  /** Index of the turn in the script, for warnings. */
  scriptIndex: number;
  turnIndex: number;
  conversation: string;
  ctx: TemplateContext;
  plan: FaultPlan;
  warnings: string[];
}

function playTurn({ turn, scriptIndex, turnIndex, conversation, ctx, plan, warnings }: TurnInput): Answer {
  if (turn === undefined) {
    const content =
      plan.oversizedChars === undefined ? FINAL_CONTENT : padContent(FINAL_CONTENT, plan.oversizedChars);
    return { content, toolCalls: [] };
  }
  const at = `turns[${scriptIndex}]`;
  const toolCalls = (turn.tool_calls ?? []).map((call, i): SentToolCall => {
    let name = resolveText(call.name, ctx, `${at}.tool_calls[${i}].name`, warnings);
    if (plan.hallucinatedCalls.includes(i)) name = nearMissName(name);
    const args = resolveTemplates(call.arguments ?? {}, ctx, `${at}.tool_calls[${i}].arguments`, warnings);
    let text = typeof args === 'string' ? args : JSON.stringify(args);
    if (plan.malformedCalls.includes(i)) text = corruptJson(text);
    const id = call.id === undefined ? toolCallId(conversation, turnIndex, i) : call.id;
    const type = call.type === undefined ? 'function' : call.type;
    return {
      ...(id === null ? {} : { id }),
      ...(type === null ? {} : { type }),
      function: { name, arguments: text },
    };
  });
  let content = turn.content === undefined ? null : resolveText(turn.content, ctx, `${at}.content`, warnings);
  if (plan.oversizedChars !== undefined) content = padContent(content ?? '', plan.oversizedChars);
  return {
    content,
    toolCalls,
    ...(turn.refusal === undefined ? {} : { refusal: turn.refusal }),
    ...(turn.reasoning === undefined ? {} : { reasoning: turn.reasoning }),
    ...(turn.finish_reason === undefined ? {} : { finishReason: turn.finish_reason }),
  };
}

/**
 * Decides the answer to one chat-completions request: validates it, picks the scenario and the
 * turn from the request alone, applies faults and plays the turn.
 */
export function handleChat(state: SimState, headers: Headers, body: unknown): ChatResult {
  const validated = validateChatRequest(body);
  if (!validated.ok) return rejected(validated.error);
  const request = validated.request;
  const scenario = selectScenario(state, request, headers);
  if (!('turns' in scenario)) return rejected(scenario);

  const conversation = conversationKey(scenario.name, request.messages, header(headers, CONVERSATION_HEADER));
  const side = sideTurn(scenario, request);
  const planning = !side && isPlanRequest(request);
  const index = planning ? null : turnIndex(request.messages);
  const last = scenario.turns.length - 1;
  const scriptIndex = index === null ? -1 : index <= last ? index : scenario.turns[last]?.repeat ? last : -1;
  const turn = side?.turn ?? scenario.turns[scriptIndex];
  const slot = `${scenario.name}\0${conversation}\0${side ? `schema:${side.name}` : (index ?? 'plan')}`;
  const plan = planFaults({
    scenario,
    turn,
    slot: String(index ?? 'plan'),
    conversation,
    attempt: state.counters.arrive(slot),
    answered: state.counters.answeredCount(slot),
    toolCallCount: turn?.tool_calls?.length ?? 0,
    streaming: request.stream === true,
  });
  const result = { delayMs: plan.latencyMs, scenario: scenario.name, turn: index, faults: plan.applied };

  const failure = transportAction(plan, request.model);
  if (failure !== undefined) return { ...result, action: failure, warnings: [] };

  const warnings: string[] = [];
  const noisy =
    scenario.noisy && !planning && !side
      ? noisyAnswer(scenario.noisy, request, conversation, index ?? 0)
      : undefined;
  const answer: Answer = planning
    ? {
        content:
          scenario.plan || !scenario.noisy
            ? JSON.stringify({ steps: scenario.plan ?? [] })
            : noisyPlan(request),
        toolCalls: [],
      }
    : noisy
      ? noisy.answer
      : scenario.random && !side
        ? randomAnswer(scenario.random, request, conversation, index ?? 0)
        : playTurn({
            turn,
            scriptIndex,
            turnIndex: index ?? 0,
            conversation,
            ctx: templateContext(request.messages),
            plan,
            warnings,
          });
  state.counters.markAnswered(slot);
  const completion = buildCompletion(request, answer);
  const mistakes = noisy?.mistakes.length ? { mistakes: noisy.mistakes } : {};
  return { ...result, action: streamedOrNot(request, completion, plan), warnings, ...mistakes };
}

/** The scenario's answer to a request for a JSON Schema it lists under `schemas`, with the schema's name. */
function sideTurn(
  scenario: Scenario,
  request: ChatRequest,
): { name: string; turn: ScenarioTurn } | undefined {
  const format = request.response_format;
  const name = format?.type === 'json_schema' ? format.json_schema?.name : undefined;
  const turn = typeof name === 'string' && scenario.schemas ? scenario.schemas[name] : undefined;
  return name !== undefined && turn ? { name, turn } : undefined;
}

function streamedOrNot(request: ChatRequest, completion: ChatCompletionBody, plan: FaultPlan): ChatAction {
  if (request.stream !== true) return { kind: 'reply', status: 200, body: completion };
  const options = request.stream_options as { include_usage?: unknown } | null | undefined;
  const chunks = completionChunks(completion, options?.include_usage === true);
  const fault = plan.stream;
  return {
    kind: 'stream',
    body: completion,
    chunks,
    ...(fault === undefined
      ? {}
      : {
          fault: { type: fault.type, afterChunks: fault.after_chunks ?? DEFAULT_STREAM_FAULT_AFTER_CHUNKS },
        }),
  };
}
