import type OpenAI from 'openai';
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
} from 'openai/resources/chat/completions';

/** Text a streamed turn has produced so far, handed out as it arrives. */
export interface AnswerDelta {
  /** The try of this turn the text belongs to, from 1; a new try starts the text over. */
  attempt: number;
  content?: string;
  reasoning?: string;
}

/** Receives the text of a streamed turn as it arrives. */
export type DeltaListener = (delta: AnswerDelta) => void;

type Message = ChatCompletion['choices'][number]['message'] & {
  reasoning_content?: string;
  reasoning?: string;
};
type Delta = ChatCompletionChunk['choices'][number]['delta'] & {
  reasoning_content?: string | null;
  reasoning?: string | null;
};
interface PartialCall {
  id?: string;
  type?: string;
  function: { name: string; arguments: string };
}

/** Folds chunks into the ChatCompletion the same request would have got without streaming. */
export class ChunkAssembler {
  private id = '';
  private model = '';
  private created = 0;
  private content: string | null = null;
  private refusal: string | null = null;
  private reasoningContent: string | undefined;
  private reasoning: string | undefined;
  private readonly calls: PartialCall[] = [];
  private finish: string | null = null;
  private usage: ChatCompletion['usage'];

  /** Adds one chunk; returns the text it carried, for live subscribers. */
  add(chunk: ChatCompletionChunk): { content?: string; reasoning?: string } {
    this.id ||= chunk.id;
    this.model ||= chunk.model;
    this.created ||= chunk.created;
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (choice === undefined) return {};
    if (choice.finish_reason) this.finish = choice.finish_reason;
    const delta = (choice.delta ?? {}) as Delta;
    const out: { content?: string; reasoning?: string } = {};
    if (typeof delta.content === 'string') {
      this.content = (this.content ?? '') + delta.content;
      if (delta.content !== '') out.content = delta.content;
    }
    if (typeof delta.refusal === 'string') this.refusal = (this.refusal ?? '') + delta.refusal;
    if (typeof delta.reasoning_content === 'string') {
      this.reasoningContent = (this.reasoningContent ?? '') + delta.reasoning_content;
      out.reasoning = delta.reasoning_content;
    }
    if (typeof delta.reasoning === 'string') {
      this.reasoning = (this.reasoning ?? '') + delta.reasoning;
      out.reasoning = (out.reasoning ?? '') + delta.reasoning;
    }
    for (const d of delta.tool_calls ?? []) {
      const call = (this.calls[d.index] ??= { function: { name: '', arguments: '' } });
      if (typeof d.id === 'string') call.id = d.id;
      if (typeof d.type === 'string') call.type = d.type;
      if (typeof d.function?.name === 'string') call.function.name += d.function.name;
      if (typeof d.function?.arguments === 'string') call.function.arguments += d.function.arguments;
    }
    return out;
  }

  /** The completion; a stream that never sent a finish_reason was cut and is an error. */
  result(): ChatCompletion {
    if (this.finish === null) throw new StreamIncomplete();
    const message = {
      role: 'assistant',
      content: this.content,
      refusal: this.refusal,
      ...(this.reasoningContent === undefined ? {} : { reasoning_content: this.reasoningContent }),
      ...(this.reasoning === undefined ? {} : { reasoning: this.reasoning }),
      ...(this.calls.length > 0 ? { tool_calls: this.calls.filter((c) => c !== undefined) } : {}),
    } as Message;
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [
        {
          index: 0,
          message,
          finish_reason: this.finish as ChatCompletion['choices'][number]['finish_reason'],
          logprobs: null,
        },
      ],
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }
}

/** A stream that ended without its last chunk. */
export class StreamIncomplete extends Error {
  constructor(
    message = 'the model stream ended before its finish_reason',
    /** The stream stopped moving for a whole request timeout: a timeout, not a cut. */
    readonly stalled = false,
  ) {
    super(message);
    this.name = 'StreamIncomplete';
  }
}

/**
 * Whether a failure broke the stream itself (connection cut, a chunk that is not JSON, no
 * finish_reason): such a turn is asked again. HTTP errors were already retried by the SDK, and aborts
 * are the caller's.
 */
export function brokeMidStream(err: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted || err instanceof APIUserAbortError) return false;
  // No answer started: the SDK's own retries already covered it (a refused connection, a timeout).
  if (err instanceof APIConnectionError) return false;
  if (err instanceof APIError && typeof err.status === 'number') return false;
  return true;
}

/**
 * One model turn asked with `stream: true`: the chunks are assembled into the ChatCompletion the
 * non-streamed call returns, and their text is handed to `onDelta` as it arrives. A stream that breaks
 * mid-answer is asked again, up to `maxRetries` times (the SDK's own retries cover failures before
 * the first byte).
 */
export async function streamCompletion(
  client: OpenAI,
  params: ChatCompletionCreateParamsNonStreaming,
  options: { maxRetries: number; idleMs: number; signal?: AbortSignal; onDelta?: DeltaListener },
): Promise<ChatCompletion> {
  const { signal, onDelta } = options;
  for (let attempt = 1; ; attempt += 1) {
    const assembler = new ChunkAssembler();
    // One signal per attempt, aborted by the caller's or when the stream stops moving for a whole request
    // timeout (given up, like a request that hangs). A listener rather than `AbortSignal.any`, whose
    // combined signal stays tied to the caller's until it is collected.
    const stop = new AbortController();
    let stalled = false;
    const timer = setTimeout(() => {
      stalled = true;
      stop.abort();
    }, options.idleMs);
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const stream = await client.chat.completions.create(
        { ...params, stream: true, stream_options: { include_usage: true } },
        { signal: stop.signal, maxRetries: options.maxRetries },
      );
      for await (const chunk of stream) {
        // Restarted in place: one timer per attempt rather than a new one per chunk.
        timer.refresh();
        const text = assembler.add(chunk);
        if (onDelta && (text.content !== undefined || text.reasoning !== undefined))
          onDelta({ attempt, ...text });
      }
      if (signal?.aborted) throw new APIUserAbortError();
      if (stalled) throw stalledError(options.idleMs);
      return assembler.result();
    } catch (err) {
      const idle = stalled && !signal?.aborted;
      if (attempt > options.maxRetries || !(idle || brokeMidStream(err, signal)))
        throw idle ? stalledError(options.idleMs) : err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** A stream given up for sending nothing for a whole request timeout (the abort that ended it is ours). */
function stalledError(idleMs: number): StreamIncomplete {
  return new StreamIncomplete(`the model stream stalled: nothing for ${idleMs} ms`, true);
}
