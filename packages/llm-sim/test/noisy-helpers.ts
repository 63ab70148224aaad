import type OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

export const CITIES = ['北京', '上海', '广州', '深圳', '杭州', '成都'];

/** A weather tool with an enum of bare city names; `hints` adds the seeds' fix (aliases and examples). */
export function weatherTool(hints: boolean): ChatCompletionTool {
  return {
    type: 'function',
    function: {
      name: 'query_weather',
      description: hints
        ? 'Weather forecast for one city. Map 广州市 or 广州省 to 广州, 上海市 to 上海.'
        : 'Weather forecast for one city.',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', enum: CITIES, ...(hints ? { examples: ['广州', '上海'] } : {}) },
          days: { type: 'integer', minimum: 1, maximum: 7, ...(hints ? { examples: [2] } : {}) },
        },
        required: ['city'],
        additionalProperties: false,
      },
    },
  };
}

export const fileTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'write_markdown_file',
    description: 'Write a markdown file into the outputs folder.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
};

export const mailTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'send_email',
    description: 'Send an email with a subject and a body to the user.',
    parameters: {
      type: 'object',
      properties: { subject: { type: 'string' }, body: { type: 'string' } },
      required: ['subject', 'body'],
      additionalProperties: false,
    },
  },
};

const PHRASES = [
  (c: string) => `${c}天气怎么样？`,
  (c: string) => `查一下${c}的天气`,
  (c: string) => `明天${c}下雨吗`,
  (c: string) => `What is the weather in ${c}?`,
  (c: string) => `帮我看看${c}周末天气预报`,
];

/** `n` different weather questions: every city, in several phrasings. */
export function weatherQuestions(n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const phrase = PHRASES[i % PHRASES.length]!;
    return `${phrase(CITIES[Math.floor(i / PHRASES.length) % CITIES.length]!)} #${i}`;
  });
}

interface ToolSchema {
  properties: Record<string, { type?: string; enum?: string[] }>;
  required?: string[];
}

/**
 * What the platform's executor answers, reduced to what these tests need: unknown names and arguments
 * outside the schema are refused with an error that names the problem (or, with `vague`, does not).
 */
export function toolResult(
  tools: ChatCompletionTool[],
  name: string,
  rawArgs: string,
  vague = false,
): { ok: boolean; content?: unknown; error?: Record<string, unknown> } {
  const tool = tools.find((t) => t.type === 'function' && t.function.name === name);
  if (tool === undefined || tool.type !== 'function') {
    return vague
      ? { ok: false, error: { kind: 'unknown_tool', message: 'the call failed' } }
      : {
          ok: false,
          error: { kind: 'unknown_tool', message: `no tool ${name}`, did_you_mean: 'query_weather' },
        };
  }
  const schema = tool.function.parameters as unknown as ToolSchema;
  const args = JSON.parse(rawArgs) as Record<string, unknown>;
  const problem = argumentProblem(schema, args);
  if (problem === undefined) return { ok: true, content: { summary: `${name} ok`, path: args.path } };
  return vague
    ? { ok: false, error: { kind: 'invalid_arguments', message: 'the call failed' } }
    : {
        ok: false,
        error: { kind: 'invalid_arguments', message: problem.message, field: `/${problem.field}` },
      };
}

function argumentProblem(schema: ToolSchema, args: Record<string, unknown>) {
  for (const field of Object.keys(args)) {
    const prop = schema.properties[field];
    if (prop === undefined) return { field, message: `${field} is not an argument of this tool` };
    const value = args[field];
    if (prop.enum && !prop.enum.includes(value as string))
      return { field, message: `${field} must be one of ${prop.enum.join(', ')}` };
    if (prop.type === 'integer' && !Number.isInteger(value))
      return { field, message: `${field} must be an integer` };
    if (prop.type === 'string' && typeof value !== 'string')
      return { field, message: `${field} must be a string` };
  }
  const missing = (schema.required ?? []).find((f) => args[f] === undefined);
  return missing === undefined ? undefined : { field: missing, message: `${missing} is required` };
}

/** Whether a first call is one the executor would run as sent. */
export function firstCallValid(tools: ChatCompletionTool[], name: string, rawArgs: string): boolean {
  return toolResult(tools, name, rawArgs).ok;
}

/** Plays a whole task against the noisy model as an agent loop would; returns the tools that succeeded. */
export async function playTask(
  openai: OpenAI,
  model: string,
  task: string,
  opts: {
    tools: ChatCompletionTool[];
    system?: string;
    vague?: boolean;
    maxTurns?: number;
    /** A system message sending the model back once after its first answer, as the platform's reminder does. */
    remind?: string;
  },
): Promise<{ succeeded: string[]; turns: number }> {
  const messages: ChatCompletionMessageParam[] = [
    ...(opts.system ? [{ role: 'system' as const, content: opts.system }] : []),
    { role: 'user', content: task },
  ];
  const succeeded: string[] = [];
  let reminded = false;
  for (let turn = 0; turn < (opts.maxTurns ?? 10); turn += 1) {
    const res = await openai.chat.completions.create({ model, messages, tools: opts.tools });
    const calls = (res.choices[0]!.message.tool_calls ?? []).flatMap((c) =>
      c.type === 'function' ? [c] : [],
    );
    if (calls.length === 0 && opts.remind !== undefined && !reminded) {
      reminded = true;
      messages.push(
        { role: 'assistant', content: res.choices[0]!.message.content ?? '' },
        { role: 'system', content: opts.remind },
      );
      continue;
    }
    if (calls.length === 0) return { succeeded, turns: turn + 1 };
    messages.push({ role: 'assistant', content: null, tool_calls: calls });
    for (const c of calls) {
      const result = toolResult(opts.tools, c.function.name, c.function.arguments, opts.vague);
      if (result.ok) succeeded.push(c.function.name);
      messages.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(result) });
    }
  }
  return { succeeded, turns: opts.maxTurns ?? 10 };
}
