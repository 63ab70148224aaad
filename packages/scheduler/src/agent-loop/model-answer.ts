import { NAME_PATTERN, TOOL_CALL_ID_PATTERN, type ToolErrorInfo } from '@agent-reach/protocol';
import { argumentsDigest, closestName, constants } from '@agent-reach/shared';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { RunState, Usage } from './run-state.js';

/** One tool call of a model turn, as the run records it. */
export interface ModelCall {
  /** Unique in the run and pattern-valid (rewritten when the model's was not). */
  id: string;
  /**
   * The name as the model wrote it (cut to {@link constants.MAX_RECORDED_TOOL_NAME_CHARS}), even when it
   * is not a valid tool name: such a call is refused, and never recorded as a call of another tool.
   */
  name: string;
  /** The model's argument string, or only its first characters when it was over the limit. */
  arguments: string;
  /** Set when the call is answered without running it; the error the model gets. */
  refused?: ToolErrorInfo;
  /** Length and sha256 of the model's arguments, when only a prefix was kept. */
  original?: { chars: number; sha256: string };
}

/** A model answer, read defensively: providers send missing ids, missing types, huge strings. */
export interface ModelTurn {
  content: string | null;
  /** `message.refusal`, when the model declined. */
  refusal?: string;
  finishReason: string;
  calls: ModelCall[];
  /** Calls past {@link constants.MAX_TOOL_CALLS_PER_TURN}, left out. */
  droppedCalls: number;
  /** The text was longer than {@link constants.MAX_MODEL_TEXT_CHARS} and was cut. */
  textCut: boolean;
  /** The reasoning text a thinking model sent (`reasoning_content` or `reasoning`), capped. */
  reasoning?: string;
}

type Raw = Record<string, unknown>;

function isObj(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function capText(text: string): { text: string; cut: boolean } {
  return text.length > constants.MAX_MODEL_TEXT_CHARS
    ? { text: text.slice(0, constants.MAX_MODEL_TEXT_CHARS), cut: true }
    : { text, cut: false };
}

function parses(json: string): boolean {
  try {
    JSON.parse(json);
    return true;
  } catch {
    return false;
  }
}

/** One raw tool call as the run will record it, before its id is made unique. */
function readCall(
  raw: unknown,
  finishReason: string,
  reachable: readonly string[],
): Omit<ModelCall, 'id'> & { id: unknown } {
  const call = isObj(raw) ? raw : {};
  const type = call.type;
  const fn = isObj(call.function) ? call.function : undefined;
  const custom = type === 'custom' && isObj(call.custom) ? call.custom : undefined;
  const rawName = fn?.name ?? custom?.name;
  const given = typeof rawName === 'string' ? rawName : '';
  const validName = NAME_PATTERN.test(given);
  const name = given.slice(0, constants.MAX_RECORDED_TOOL_NAME_CHARS);
  const rawArgs = fn?.arguments;
  let args =
    typeof rawArgs === 'string'
      ? rawArgs
      : rawArgs === undefined || rawArgs === null
        ? '{}'
        : JSON.stringify(rawArgs);
  // A call without `type` but with a `function` is a function call; any other type is not one we run.
  if ((type !== undefined && type !== 'function') || !fn) {
    const kind = typeof type === 'string' ? type.slice(0, 64) : String(type);
    return {
      id: call.id,
      name,
      arguments: args.slice(0, constants.TOOL_ARGUMENTS_PREFIX_CHARS),
      refused: {
        kind: 'unknown_tool',
        message: fn
          ? `tool calls of type "${kind}" are not supported: call one of the function tools offered`
          : 'the tool call has no function: call one of the function tools offered, with a name and arguments',
        retryable: false,
      },
    };
  }
  if (!validName) {
    const guess = closestName(providerName(name), reachable);
    return {
      id: call.id,
      name,
      arguments: args.slice(0, constants.TOOL_ARGUMENTS_PREFIX_CHARS),
      refused: {
        kind: 'unknown_tool',
        message:
          `${JSON.stringify(given.slice(0, 64))} is not a tool name (letters, digits, "_" and "-", 1 to 64 ` +
          `characters)${guess ? `; did you mean "${guess}"?` : ''}`,
        ...(guess ? { did_you_mean: guess } : {}),
        available_tools: [...reachable],
        retryable: false,
      },
    };
  }
  if (args.length > constants.MAX_TOOL_ARGUMENTS_CHARS) {
    const original = { chars: args.length, sha256: argumentsDigest(args) };
    args = args.slice(0, constants.TOOL_ARGUMENTS_PREFIX_CHARS);
    return {
      id: call.id,
      name,
      arguments: args,
      original,
      refused: {
        kind: 'invalid_arguments',
        constraint: 'max_length',
        message:
          `the arguments are ${original.chars} characters long, over the limit of ` +
          `${constants.MAX_TOOL_ARGUMENTS_CHARS}: the call was not run; send smaller arguments (split the work into several calls)`,
        retryable: false,
      },
    };
  }
  if (finishReason === 'length' && !parses(args)) {
    return {
      id: call.id,
      name,
      arguments: args,
      refused: {
        kind: 'invalid_arguments',
        constraint: 'truncated',
        message:
          'your answer reached the output token limit while writing these arguments, so they were cut off ' +
          'and the call was not run; retry with smaller arguments (split the work into several calls)',
        retryable: false,
      },
    };
  }
  return { id: call.id, name, arguments: args };
}

/**
 * A recorded tool name as it goes back to the provider in the history, which refuses names outside
 * {@link NAME_PATTERN}: a valid name unchanged, any other in a safe spelling. The run's record keeps the
 * name the model wrote; only the provider's copy is spelled so.
 */
export function providerName(name: string): string {
  if (NAME_PATTERN.test(name)) return name;
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'unnamed';
}

/** Every tool call id the run has used: in its history, its steps and its approvals. */
export function usedIds(state: RunState): Set<string> {
  const used = new Set<string>(state.steps.map((s) => s.tool_call_id));
  for (const m of state.messages) {
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) used.add(c.id);
    if (m.role === 'tool') used.add(m.tool_call_id);
  }
  for (const a of Object.values(state.approvals)) used.add(a.toolCallId);
  for (const r of state.localResults ?? []) used.add(r.tool_call_id);
  return used;
}

/**
 * Tool call ids key a run's recorded results and its jobs, so each must be unique within the run and
 * match {@link TOOL_CALL_ID_PATTERN}. Some OpenAI-compatible servers reuse ids (`call_0` every turn), send
 * empty ones or none: such an id is rewritten before it enters the history, and the model only ever sees
 * the rewritten one. Names of `Object.prototype` (`__proto__`) are rewritten too. The model's ids are kept where they can be (first use wins); the rewritten ones are
 * `call_t<turn>_<index>`, with a suffix when even that is taken.
 */
export function uniqueIds<T extends { id: unknown }>(
  state: RunState,
  turn: number,
  calls: T[],
): Array<Omit<T, 'id'> & { id: string }> {
  const used = usedIds(state);
  const kept = calls.map((c) => {
    const ok =
      typeof c.id === 'string' &&
      TOOL_CALL_ID_PATTERN.test(c.id) &&
      !(c.id in Object.prototype) &&
      !used.has(c.id);
    if (ok) used.add(c.id as string);
    return ok;
  });
  return calls.map((c, i) => {
    if (kept[i]) return { ...c, id: c.id as string };
    let id = `call_t${turn}_${i}`;
    for (let n = 1; used.has(id); n += 1) id = `call_t${turn}_${i}_${n}`;
    used.add(id);
    return { ...c, id };
  });
}

/** Usage numbers of a provider's answer, when it sent sane ones. */
export function readUsage(res: { usage?: unknown }): Usage | undefined {
  const u = res.usage as Partial<Usage> | undefined;
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : 0);
  if (!u || typeof u !== 'object') return undefined;
  const prompt = n(u.prompt_tokens);
  const completion = n(u.completion_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: n(u.total_tokens) || prompt + completion,
  };
}

function firstChoice(res: ChatCompletion): { choice: Raw; message: Raw } {
  const choices = (res as { choices?: unknown }).choices;
  const choice = Array.isArray(choices) && isObj(choices[0]) ? choices[0] : {};
  return { choice, message: isObj(choice.message) ? choice.message : {} };
}

/** The text of an answer with no tools (a plan), or undefined when the provider sent none. */
export function answerText(res: ChatCompletion): string | undefined {
  const { content } = firstChoice(res).message;
  return typeof content === 'string' ? content : undefined;
}

/** Reads turn `turn` of a run from the provider's answer. Never throws on a malformed answer. */
export function readModelTurn(
  res: ChatCompletion,
  state: RunState,
  turn: number,
  reachable: readonly string[] = [],
): ModelTurn {
  const { choice, message } = firstChoice(res);
  const finishReason =
    typeof choice.finish_reason === 'string' ? choice.finish_reason.slice(0, 64) : 'unknown';
  const content = typeof message.content === 'string' ? capText(message.content) : undefined;
  const refusal =
    typeof message.refusal === 'string' && message.refusal.trim() !== ''
      ? capText(message.refusal)
      : undefined;
  const rawReasoning = message.reasoning_content ?? message.reasoning;
  const reasoning =
    typeof rawReasoning === 'string' && rawReasoning.trim() !== '' ? capText(rawReasoning) : undefined;
  const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const taken = rawCalls.slice(0, constants.MAX_TOOL_CALLS_PER_TURN);
  return {
    content: content?.text ?? null,
    ...(refusal ? { refusal: refusal.text } : {}),
    ...(reasoning ? { reasoning: reasoning.text } : {}),
    finishReason,
    calls: uniqueIds(
      state,
      turn,
      taken.map((c) => readCall(c, finishReason, reachable)),
    ),
    droppedCalls: rawCalls.length - taken.length,
    textCut: Boolean(content?.cut || refusal?.cut),
  };
}
