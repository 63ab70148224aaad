import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '../src/index.js';
import { postRaw } from './helpers.js';

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ scenarios: [{ name: 'sim', turns: [{ content: 'ok' }] }] });
});
afterAll(async () => {
  await sim.close();
});

const user = { role: 'user', content: 'hi' };
const call = (id: string) => ({ id, type: 'function', function: { name: 'query_weather', arguments: '{}' } });
const asks = (...ids: string[]) => ({ role: 'assistant', content: null, tool_calls: ids.map(call) });
const answers = (id: string) => ({ role: 'tool', tool_call_id: id, content: '{"ok":true}' });
const tool = (fn: Record<string, unknown>, type = 'function') => ({ type, function: fn });
const weatherTool = tool({ name: 'query_weather', parameters: { type: 'object', properties: {} } });

interface Case {
  title: string;
  body: unknown;
  message: string;
  param: string | null;
}

const cases: Case[] = [
  {
    title: 'a body that is not JSON',
    body: '{"model": ',
    message: 'the request body is not valid JSON',
    param: null,
  },
  {
    title: 'a body that is a JSON array',
    body: [],
    message: 'the request body must be a JSON object',
    param: null,
  },
  {
    title: 'a missing model',
    body: { messages: [user] },
    message: 'you must provide a model parameter',
    param: 'model',
  },
  {
    title: 'a model that is not a string',
    body: { model: 3, messages: [user] },
    message: 'you must provide a model parameter',
    param: 'model',
  },
  {
    title: 'an empty messages array',
    body: { model: 'sim', messages: [] },
    message: 'messages must be a non-empty array',
    param: 'messages',
  },
  {
    title: 'an unknown role',
    body: { model: 'sim', messages: [user, { role: 'robot', content: 'x' }] },
    message: "messages[1].role must be one of system, developer, user, assistant, tool (got 'robot')",
    param: 'messages[1].role',
  },
  {
    title: 'a user message without content',
    body: { model: 'sim', messages: [{ role: 'user' }] },
    message: 'messages[0].content must be a string or an array of content parts',
    param: 'messages[0].content',
  },
  {
    title: 'a tool message that answers no earlier tool call',
    body: { model: 'sim', messages: [user, answers('call_x')] },
    message:
      "messages[1].tool_call_id 'call_x' does not answer any tool_calls of an earlier assistant message",
    param: 'messages[1].tool_call_id',
  },
  {
    title: 'a tool message whose id is not among the preceding tool calls',
    body: { model: 'sim', messages: [user, asks('call_a'), answers('call_b')] },
    message:
      "messages[2].tool_call_id 'call_b' does not answer any tool_calls of the preceding assistant message messages[1]",
    param: 'messages[2].tool_call_id',
  },
  {
    title: 'a tool call answered twice',
    body: { model: 'sim', messages: [user, asks('call_a', 'call_b'), answers('call_a'), answers('call_a')] },
    message: "messages[3].tool_call_id 'call_a' was already answered by messages[2]",
    param: 'messages[3].tool_call_id',
  },
  {
    title: 'an unanswered tool call followed by a user message',
    body: { model: 'sim', messages: [user, asks('call_a', 'call_b'), answers('call_a'), user] },
    message:
      "messages[1].tool_calls: tool call(s) 'call_b' not answered by tool messages before messages[3] (user)",
    param: 'messages[1].tool_calls',
  },
  {
    title: 'an assistant message with tool calls at the end of messages',
    body: { model: 'sim', messages: [user, asks('call_a')] },
    message:
      "messages[1].tool_calls: tool call(s) 'call_a' not answered by tool messages before the end of messages",
    param: 'messages[1].tool_calls',
  },
  {
    title: 'a tool message that does not directly follow its call',
    body: { model: 'sim', messages: [user, asks('call_a'), answers('call_a'), user, answers('call_a')] },
    message: "messages[4]: the tool message answering 'call_a' must directly follow",
    param: 'messages[4].role',
  },
  {
    title: 'an assistant message without content or tool calls',
    body: { model: 'sim', messages: [user, { role: 'assistant' }, user] },
    message: 'messages[1].content is required unless tool_calls is set',
    param: 'messages[1].content',
  },
  {
    title: 'a tool that is not a function',
    body: { model: 'sim', messages: [user], tools: [tool({ name: 'x' }, 'retrieval')] },
    message: "tools[0].type must be 'function'",
    param: 'tools[0].type',
  },
  {
    title: 'a tool name with invalid characters',
    body: { model: 'sim', messages: [user], tools: [weatherTool, tool({ name: 'query weather!' })] },
    message: "tools[1].function.name must match ^[a-zA-Z0-9_-]{1,64}$ (got 'query weather!')",
    param: 'tools[1].function.name',
  },
  {
    title: 'tool parameters that are not an object schema',
    body: { model: 'sim', messages: [user], tools: [tool({ name: 'q', parameters: { type: 'array' } })] },
    message: "tools[0].function.parameters must be a JSON Schema object with type 'object'",
    param: 'tools[0].function.parameters',
  },
  {
    title: 'a tool description that is not a string',
    body: { model: 'sim', messages: [user], tools: [tool({ name: 'q', description: 5 })] },
    message: 'tools[0].function.description must be a string',
    param: 'tools[0].function.description',
  },
  {
    title: 'a zero max_tokens',
    body: { model: 'sim', messages: [user], max_tokens: 0 },
    message: 'max_tokens must be a positive integer (got 0)',
    param: 'max_tokens',
  },
  {
    title: 'a fractional max_completion_tokens',
    body: { model: 'sim', messages: [user], max_completion_tokens: 1.5 },
    message: 'max_completion_tokens must be a positive integer (got 1.5)',
    param: 'max_completion_tokens',
  },
  {
    title: 'an unknown tool_choice',
    body: { model: 'sim', messages: [user], tools: [weatherTool], tool_choice: 'always' },
    message: "tool_choice must be 'none', 'auto', 'required'",
    param: 'tool_choice',
  },
  {
    title: 'a tool_choice naming a function not in tools',
    body: {
      model: 'sim',
      messages: [user],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'send_mail' } },
    },
    message: "tool_choice names function 'send_mail', which is not in tools",
    param: 'tool_choice',
  },
  {
    title: 'a tool_choice without tools',
    body: { model: 'sim', messages: [user], tool_choice: 'auto' },
    message: 'tool_choice is only allowed when tools are specified',
    param: 'tool_choice',
  },
  {
    title: 'an unknown response_format type',
    body: { model: 'sim', messages: [user], response_format: { type: 'yaml' } },
    message: "response_format.type must be 'text', 'json_object' or 'json_schema'",
    param: 'response_format.type',
  },
  {
    title: 'more than one choice',
    body: { model: 'sim', messages: [user], n: 2 },
    message: 'n must be 1',
    param: 'n',
  },
];

describe('request validation', () => {
  it.each(cases)(
    'rejects $title with 400 invalid_request_error naming the problem',
    async ({ body, message, param }) => {
      const res = await postRaw(sim, body);
      expect(res.status).toBe(400);
      expect(res.error!.type).toBe('invalid_request_error');
      expect(res.error!.message).toContain(message);
      expect(res.error!.param).toBe(param);
    },
  );

  it('accepts a well-formed conversation with parallel tool calls all answered', async () => {
    const body = {
      model: 'sim',
      messages: [
        { role: 'system', content: 'be brief' },
        user,
        asks('call_a', 'call_b'),
        answers('call_b'),
        answers('call_a'),
        { role: 'assistant', content: 'both done' },
        { role: 'developer', content: 'continue' },
        user,
      ],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'query_weather' } },
      max_tokens: 100,
      response_format: { type: 'text' },
    };
    const res = await postRaw(sim, body);
    expect(res.error).toBeUndefined();
    expect(res.status).toBe(200);
  });

  it('rejects a stream field that is not a boolean with a 400 naming the field', async () => {
    const res = await postRaw(sim, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      stream: 'yes',
    });
    expect(res.status).toBe(400);
    expect(res.error?.type).toBe('invalid_request_error');
    expect(res.error?.param).toBe('stream');
    expect(res.error?.message).toBe('stream must be a boolean');
  });

  it('records rejected requests with their status, error and no turn', async () => {
    sim.clearRequests();
    await postRaw(sim, { model: 'sim', messages: [] });
    expect(sim.requests).toHaveLength(1);
    expect(sim.requests[0]).toMatchObject({ scenario: null, turn: null, status: 400 });
    expect(sim.requests[0]!.response).toMatchObject({ error: { param: 'messages' } });
  });

  it('answers an unknown route with an OpenAI-shaped 404', async () => {
    const res = await fetch(`${sim.url}/embeddings`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'unknown_url' } });
  });
});
