import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { LlmSim } from '../src/index.js';

/** An SDK client for the simulator that never retries unless told to. */
export function client(sim: LlmSim, opts: { maxRetries?: number; timeout?: number } = {}): OpenAI {
  return new OpenAI({
    baseURL: sim.url,
    apiKey: 'x',
    maxRetries: opts.maxRetries ?? 0,
    timeout: opts.timeout ?? 10_000,
  });
}

/** The OpenAI error body. */
export interface ApiError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** Posts a raw body to /chat/completions; returns status, headers, parsed JSON and its `error`, if any. */
export async function postRaw(
  sim: LlmSim,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: unknown; error: ApiError | undefined }> {
  const res = await fetch(`${sim.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = (await res.json()) as { error?: ApiError };
  return { status: res.status, headers: res.headers, json, error: json.error };
}

/** Polls until `check` holds, failing after a deadline instead of sleeping a fixed time. */
export async function waitFor(check: () => boolean, what: string, deadlineMs = 5_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Appends the assistant's answer and one tool message per call, each answered by `result(name)`. */
export function withToolResults(
  messages: ChatCompletionMessageParam[],
  completion: ChatCompletion,
  result: (name: string) => unknown,
): ChatCompletionMessageParam[] {
  const message = completion.choices[0]!.message;
  const calls = (message.tool_calls ?? []).filter((c) => c.type === 'function');
  return [
    ...messages,
    { role: 'assistant', content: message.content, tool_calls: calls },
    ...calls.map((c): ChatCompletionMessageParam => ({
      role: 'tool',
      tool_call_id: c.id,
      content: JSON.stringify(result(c.function.name)),
    })),
  ];
}

/** The function tool calls of a completion. */
export function functionCalls(
  completion: ChatCompletion,
): Array<{ id: string; name: string; arguments: string }> {
  return (completion.choices[0]!.message.tool_calls ?? []).flatMap((c) =>
    c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [],
  );
}
