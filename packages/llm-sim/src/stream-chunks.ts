import { MAX_STREAM_PIECES, STREAM_PIECE_CHARS } from './constants.js';
import type { ChatCompletionBody } from './completion.js';

/** One `chat.completion.chunk` as the API streams it. */
export interface ChatCompletionChunkBody {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: string;
  service_tier: 'default';
  choices: Array<{ index: 0; delta: Record<string, unknown>; logprobs: null; finish_reason: string | null }>;
  usage?: ChatCompletionBody['usage'] | null;
}

/**
 * Splits text into pieces of {@link STREAM_PIECE_CHARS} characters, or into {@link MAX_STREAM_PIECES}
 * longer ones, never inside a surrogate pair.
 */
export function pieces(text: string): string[] {
  const chars = Array.from(text);
  const size = Math.max(STREAM_PIECE_CHARS, Math.ceil(chars.length / MAX_STREAM_PIECES));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/**
 * The chunks that stream the given completion the way the API does: the role first, then reasoning,
 * content and refusal pieces, then each tool call (its `index`, `id`, `type` and name first, then its
 * argument pieces), then `finish_reason`; with `includeUsage` every chunk has `usage: null` and a last
 * chunk with no choices carries the usage.
 */
export function completionChunks(
  completion: ChatCompletionBody,
  includeUsage: boolean,
): ChatCompletionChunkBody[] {
  const choice = completion.choices[0];
  const message = choice.message;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunkBody => ({
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    system_fingerprint: completion.system_fingerprint,
    service_tier: completion.service_tier,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
  });
  const chunks = [chunk({ role: 'assistant', content: '', refusal: null })];
  for (const piece of pieces(message.reasoning_content ?? ''))
    chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of pieces(message.content ?? '')) chunks.push(chunk({ content: piece }));
  for (const piece of pieces(message.refusal ?? '')) chunks.push(chunk({ refusal: piece }));
  (message.tool_calls ?? []).forEach((call, index) => {
    const head = {
      index,
      ...(call.id === undefined ? {} : { id: call.id }),
      ...(call.type === undefined ? {} : { type: call.type }),
      function: { name: call.function.name, arguments: '' },
    };
    chunks.push(chunk({ tool_calls: [head] }));
    for (const piece of pieces(call.function.arguments)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, choice.finish_reason));
  if (includeUsage) chunks.push({ ...chunk({}), choices: [], usage: completion.usage });
  return chunks;
}

/** One server-sent event carrying a chunk (or `[DONE]`). */
export function sseData(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
