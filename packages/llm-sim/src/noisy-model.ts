import type { Answer } from './completion.js';
import { NOISY_DEFAULT_RATES } from './constants.js';
import { messageText, toolCallId } from './conversation.js';
import { Draws } from './draws.js';
import { intendedArguments, type FillContext } from './noisy-arguments.js';
import { taskSteps, type NoisyStep } from './noisy-intent.js';
import { applyMistakes, type NoisyCall } from './noisy-mistakes.js';
import { structuredContent } from './noisy-output.js';
import { namedOnlyTools, offeredNoisyTools, type NoisyTool } from './noisy-tools.js';
import type { ChatMessage, ChatRequest } from './request-validation.js';
import type { NoisyMistake, NoisyModel, NoisyRates } from './types.js';

/** The noisy model's answer and the mistakes it holds. */
export interface NoisyAnswer {
  answer: Answer;
  mistakes: NoisyMistake[];
}

/** A system prompt carrying the task stack: the platform's heading, or a checklist of steps. */
const TASK_STACK = /task stack|任务清单|待办任务|^\s*\d+\.\s*\[[ xX]\]/im;
/** Error kinds a model answers by correcting its call; any other failure ends the step. */
const FIXABLE = new Set(['unknown_tool', 'invalid_arguments']);
/** Tries at one step before the model gives up on it and says what failed. */
const MAX_TRIES_PER_STEP = 3;

interface ToolError {
  kind?: string;
  message?: string;
  field?: string;
  expected?: string;
  example?: unknown;
  did_you_mean?: string;
  available_tools?: unknown;
  constraint?: string;
}

/** Where the current task stands, replayed from the model's own earlier turns. */
interface Progress {
  step: number;
  /** Final answers given so far in this task: more than none, the model was sent back after answering. */
  answers: number;
  tries: number;
  results: FillContext['results'];
  failed: Array<{ tool: string; message: string }>;
  last?: { call: NoisyCall; error: ToolError };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function parseArgs(text: string): Record<string, unknown> {
  const v = parseJson(text);
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** Replays the turns after the task's user message: which step is next, what succeeded, what failed. */
function replay(history: readonly ChatMessage[]): Progress {
  const p: Progress = { step: 0, answers: 0, tries: 0, results: [], failed: [] };
  const results = new Map<string, unknown>();
  for (const m of history)
    if (m.role === 'tool') results.set(m.tool_call_id ?? '', parseJson(messageText(m.content)));
  for (const m of history) {
    if (m.role === 'assistant' && !m.tool_calls?.length) p.answers += 1;
    for (const call of m.role === 'assistant' ? (m.tool_calls ?? []) : []) {
      const result = results.get(call.id) as
        { ok?: unknown; error?: ToolError; content?: unknown } | undefined;
      const sent = { name: call.function.name, args: parseArgs(call.function.arguments) };
      if (result?.ok !== false) {
        p.results.push({ tool: call.function.name, content: result?.content ?? result });
        Object.assign(p, { step: p.step + 1, tries: 0, last: undefined });
      } else if (FIXABLE.has(String(result.error?.kind))) {
        Object.assign(p, { tries: p.tries + 1, last: { call: sent, error: result.error ?? {} } });
      } else {
        p.failed.push({ tool: call.function.name, message: String(result.error?.message ?? 'failed') });
        Object.assign(p, { step: p.step + 1, tries: 0, last: undefined });
      }
    }
  }
  return p;
}

/** True when an error says what is wrong: a field, the expected form, an example or a name to use. */
function namesProblem(error: ToolError, call: NoisyCall): boolean {
  if (error.did_you_mean || error.field || error.expected || error.example !== undefined) return true;
  if (Array.isArray(error.available_tools) && error.available_tools.length > 0) return true;
  const message = error.message ?? '';
  return Object.keys(call.args).some((k) => message.includes(k));
}

/** The final answer: what each step returned and what failed, as JSON when the request asks for it. */
function finalAnswer(request: ChatRequest, p: Progress, note?: string): Answer {
  const lines = p.results.map((r) => {
    const c = r.content as { summary?: unknown; path?: unknown } | undefined;
    const text =
      typeof c?.summary === 'string' ? c.summary : typeof c?.path === 'string' ? c.path : JSON.stringify(c);
    return `${r.tool}: ${String(text).slice(0, 300)}`;
  });
  for (const f of p.failed) lines.push(`${f.tool} failed: ${f.message}`);
  if (note !== undefined) lines.push(note);
  const text = lines.length > 0 ? `Done.\n${lines.join('\n')}` : 'Done.';
  const json = structuredContent(
    request,
    p.results.map((r) => r.content),
    text,
  );
  return { content: json ?? text, toolCalls: [] };
}

interface TurnInput {
  request: ChatRequest;
  options: NoisyModel;
  rates: Required<NoisyRates>;
  tools: NoisyTool[];
  steps: NoisyStep[];
  task: string;
  p: Progress;
  taskStack: boolean;
  conversation: string;
  turn: number;
}

function callAnswer(call: NoisyCall, t: TurnInput): Answer {
  const id = toolCallId(t.conversation, t.turn, 0);
  return {
    content: null,
    toolCalls: [
      { id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } },
    ],
  };
}

function nextCall(t: TurnInput): NoisyAnswer {
  const { p, steps, rates } = t;
  const seed = t.options.seed ?? 0;
  const step = steps[p.step];
  if (step === undefined) return { answer: finalAnswer(t.request, p), mistakes: [] };
  const tool = t.tools.find((x) => x.name === step.tool) as NoisyTool;
  const intended: NoisyCall = {
    name: tool.name,
    args: intendedArguments(tool, step, { task: t.task, results: p.results }),
  };
  if (p.last !== undefined) {
    const { call, error } = p.last;
    // Nothing to correct in a refused call that is the intended one: it is sent once more, then given up.
    const same = JSON.stringify(call) === JSON.stringify(intended);
    if (same && p.tries < 2) return { answer: callAnswer(call, t), mistakes: [] };
    const hopeless = same || p.tries >= MAX_TRIES_PER_STEP;
    if (hopeless)
      return {
        answer: finalAnswer(t.request, p, `${tool.name} failed: ${error.message ?? 'invalid call'}`),
        mistakes: [],
      };
    const heal = namesProblem(error, call) ? rates.self_heal : rates.self_heal_unnamed;
    if (new Draws(seed, t.conversation, 'heal', p.step, p.tries).chance(heal))
      return { answer: callAnswer(intended, t), mistakes: [] };
    return {
      answer: callAnswer(call, t),
      mistakes: [{ kind: 'repeated_mistake', tool: tool.name, sent: call.name }],
    };
  }
  const forget = t.taskStack ? rates.forgotten_step_with_stack : rates.forgotten_step;
  // Sent back after answering (the platform's reminder of open steps), the model draws afresh.
  const again = p.answers > 0 ? [p.answers] : [];
  if (p.step > 0 && new Draws(seed, t.conversation, 'forget', p.step, ...again).chance(forget)) {
    return { answer: finalAnswer(t.request, p), mistakes: [{ kind: 'forgotten_step', tool: tool.name }] };
  }
  const drawn = applyMistakes(intended, {
    tool,
    offered: new Set(t.tools.map((x) => x.name)),
    rates,
    task: t.task,
    draws: new Draws(seed, t.conversation, 'call', p.step),
  });
  return { answer: callAnswer(drawn.call, t), mistakes: drawn.mistakes };
}

/** The latest user message's text and the messages after it (this task's turns). */
function currentTask(messages: readonly ChatMessage[]): { task: string; history: ChatMessage[] } {
  let at = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') at = i;
  });
  return { task: at < 0 ? '' : messageText(messages[at]?.content), history: messages.slice(at + 1) };
}

/**
 * Answers one turn as a capable but fallible model: finds the task's steps in the latest user message,
 * replays its own earlier turns to see which step is next, corrects a call an error refused (when the
 * error names the problem, most of the time), and makes the next call with the seeds' mistakes drawn in.
 */
export function noisyAnswer(
  options: NoisyModel,
  request: ChatRequest,
  conversation: string,
  turn: number,
): NoisyAnswer {
  const rates = { ...NOISY_DEFAULT_RATES, ...options.rates };
  const tools = offeredNoisyTools(request);
  const { task, history } = currentTask(request.messages);
  const steps = taskSteps(task, tools);
  if (steps.length === 0) {
    const text = `Here is what I can say without a tool: ${task.slice(0, 200)}`;
    return { answer: { content: structuredContent(request, [], text) ?? text, toolCalls: [] }, mistakes: [] };
  }
  const taskStack = request.messages.some(
    (m) => (m.role === 'system' || m.role === 'developer') && TASK_STACK.test(messageText(m.content)),
  );
  const p = replay(history);
  return nextCall({ request, options, rates, tools, steps, task, p, taskStack, conversation, turn });
}

/** Answers a planning request: the task's steps, from the tools its system prompt lists by name. */
export function noisyPlan(request: ChatRequest): string {
  const system = request.messages
    .filter((m) => m.role === 'system')
    .map((m) => messageText(m.content))
    .join('\n');
  const names = /Available tools:\s*([^\n]*)/i.exec(system)?.[1]?.replace(/\.$/, '').split(/,\s*/) ?? [];
  const steps = taskSteps(
    currentTask(request.messages).task,
    namedOnlyTools(names.filter((n) => n !== '(none)')),
  );
  return JSON.stringify({ steps: steps.map((s) => ({ title: s.clause, tool: s.tool })) });
}
