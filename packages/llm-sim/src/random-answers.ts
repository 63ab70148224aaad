import type { Answer, FinishReason, SentToolCall } from './completion.js';
import { toolCallId } from './conversation.js';
import { Draws } from './draws.js';
import type { ChatRequest } from './request-validation.js';
import type { RandomAnswers } from './types.js';

/** Defaults of {@link RandomAnswers}, one place. */
const DEFAULTS: Required<Omit<RandomAnswers, 'seed'>> = {
  final: 0.2,
  max_calls: 4,
  unknown_tool: 0.15,
  bad_id: 0.3,
  missing_type: 0.1,
  odd_finish: 0.1,
  refusal: 0.03,
};
const FINISH_REASONS: readonly FinishReason[] = ['stop', 'tool_calls', 'length', 'content_filter'];
const UNKNOWN_NAMES = [
  'delete_everything',
  'get_weather',
  'search_web',
  'functions.noop',
  'get weather',
  'x',
];
const WORDS = ['上海', 'alpha', 'ORD-123456', '', ' ', 'null', '{}', '"quoted"', 'long-'.repeat(40)];

interface OfferedTool {
  name: string;
  properties: Record<string, { type?: unknown }>;
}

function offeredTools(request: ChatRequest): OfferedTool[] {
  return (request.tools ?? []).flatMap((tool): OfferedTool[] => {
    const fn = (tool as { function?: { name?: unknown; parameters?: { properties?: unknown } } }).function;
    if (typeof fn?.name !== 'string') return [];
    const props = fn.parameters?.properties;
    return [
      {
        name: fn.name,
        properties:
          typeof props === 'object' && props !== null ? (props as Record<string, { type?: unknown }>) : {},
      },
    ];
  });
}

function randomValue(d: Draws, type: unknown, depth = 0): unknown {
  switch (type) {
    case 'string':
      return d.pick(WORDS);
    case 'integer':
      return d.int(2_000_000) - 1000;
    case 'number':
      return (d.next() - 0.5) * 1e6;
    case 'boolean':
      return d.chance(0.5);
    case 'array':
      return depth > 1 ? [] : Array.from({ length: d.int(4) }, () => randomValue(d, undefined, depth + 1));
    case 'object':
      return depth > 1 ? {} : { [d.pick(['a', 'b', 'nested'])]: randomValue(d, undefined, depth + 1) };
    default:
      return randomValue(d, d.pick(['string', 'integer', 'boolean', 'array', 'object']), depth + 1);
  }
}

/** Arguments as JSON text: mostly an object shaped like the tool's parameters, sometimes anything. */
function randomArguments(d: Draws, tool: OfferedTool | undefined): string {
  if (d.chance(0.05)) return JSON.stringify(randomValue(d, d.pick(['string', 'integer', 'array'])));
  const args: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(tool?.properties ?? {})) {
    if (d.chance(0.8)) args[key] = randomValue(d, d.chance(0.8) ? schema.type : undefined);
  }
  if (d.chance(0.15)) args[d.pick(['extra', 'id', 'query'])] = randomValue(d, undefined);
  return JSON.stringify(args);
}

function earlierIds(request: ChatRequest): string[] {
  return request.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
}

/**
 * A random answer for one turn of a conversation; the same request always gets the same answer. Ids may
 * repeat within an answer, which the real API never sends but some compatible servers do.
 */
export function randomAnswer(
  options: RandomAnswers,
  request: ChatRequest,
  conversation: string,
  turn: number,
): Answer {
  const o = { ...DEFAULTS, ...options };
  const d = new Draws(options.seed ?? 0, conversation, turn);
  const finish = (fitting: FinishReason): FinishReason =>
    d.chance(o.odd_finish) ? d.pick(FINISH_REASONS) : fitting;
  if (d.chance(o.refusal)) {
    return {
      content: null,
      toolCalls: [],
      refusal: 'I cannot help with that.',
      finishReason: finish('stop'),
    };
  }
  const tools = offeredTools(request);
  if (d.chance(o.final) || (tools.length === 0 && d.chance(0.5))) {
    return { content: `random answer ${d.int(1000)}`, toolCalls: [], finishReason: finish('stop') };
  }
  const earlier = earlierIds(request);
  const count = 1 + d.int(Math.max(1, o.max_calls));
  const toolCalls: SentToolCall[] = [];
  for (let i = 0; i < count; i += 1) {
    const known = tools.length > 0 && !d.chance(o.unknown_tool);
    const tool = known ? d.pick(tools) : undefined;
    const name = tool?.name ?? d.pick(UNKNOWN_NAMES);
    let id: string | undefined = toolCallId(conversation, turn, i);
    if (d.chance(o.bad_id)) {
      const used = [...earlier, ...toolCalls.flatMap((c) => (c.id === undefined ? [] : [c.id]))];
      const kind = d.int(4);
      if (kind === 0) id = undefined;
      else if (kind === 1) id = '';
      else if (kind === 2 && used.length > 0) id = d.pick(used);
      else id = `call_t${turn + d.int(2)}_${d.int(count)}`;
    }
    toolCalls.push({
      ...(id === undefined ? {} : { id }),
      ...(d.chance(o.missing_type) ? {} : { type: 'function' }),
      function: { name, arguments: randomArguments(d, tool) },
    });
  }
  return {
    content: d.chance(0.3) ? 'calling tools' : null,
    toolCalls,
    finishReason: finish('tool_calls'),
  };
}
