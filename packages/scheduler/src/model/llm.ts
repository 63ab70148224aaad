import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { streamCompletion, type DeltaListener } from './stream-completion.js';
import {
  constants,
  failSpan,
  SpanKind,
  tracer,
  type JsonSchemaResponseFormat,
  type Span,
} from '@agent-reach/shared';

/** One message of a conversation, as the chat-completions API takes it. */
export type ChatMessage = ChatCompletionMessageParam;

export interface LlmOptions {
  /** OpenAI-compatible base URL (e.g. llm-sim's `http://127.0.0.1:4010/v1`). Default: the OpenAI API. */
  baseURL?: string;
  apiKey: string;
  model: string;
  /** Per-request timeout, in ms. Default 60 000. */
  timeoutMs?: number;
  /** Retries after the first try (429, 5xx, timeouts, connection errors). Default 4. */
  maxRetries?: number;
  /** Output-token cap per turn. Default 2000. */
  maxOutputTokens?: number;
  /** Ask turns with `stream: true` and hand their text to `onDelta` as it arrives. Default true. */
  stream?: boolean;
}

/** The client's options with every default filled in. */
export type ResolvedLlmOptions = LlmOptions & Required<Omit<LlmOptions, 'baseURL'>>;

/** Every default of the model client in one place: its body reads the resolved options only. */
export function resolveLlmOptions(o: LlmOptions): ResolvedLlmOptions {
  return {
    ...o,
    timeoutMs: o.timeoutMs ?? constants.DEFAULT_LLM_TIMEOUT_MS,
    maxRetries: o.maxRetries ?? constants.DEFAULT_LLM_MAX_RETRIES,
    maxOutputTokens: o.maxOutputTokens ?? constants.DEFAULT_MAX_OUTPUT_TOKENS,
    stream: o.stream ?? constants.DEFAULT_LLM_STREAM,
  };
}

/** What a turn asks of the model beyond its messages and tools; each stands over the client's own. */
export interface TurnOptions {
  /** Ask for an answer matching a JSON Schema (a run with an output schema). */
  responseFormat?: JsonSchemaResponseFormat;
  /** Output-token cap of this call (an agent's `loop.max_output_tokens`). Default: the client's. */
  maxOutputTokens?: number;
  /** Retries of this call (the SDK's, and a broken stream's). Default: the client's `maxRetries`. */
  maxRetries?: number;
}

export interface LlmClient {
  readonly model: string;
  /** The endpoint it asks (absent: not known, e.g. a replay). */
  readonly baseURL?: string;
  /**
   * One model turn with the given tools offered. Streamed (when the client streams), its text goes to
   * `onDelta` as it arrives; the answer is the same either way.
   */
  complete(
    messages: ChatMessage[],
    tools: ChatCompletionTool[],
    signal?: AbortSignal,
    onDelta?: DeltaListener,
    turn?: TurnOptions,
  ): Promise<ChatCompletion>;
  /** A JSON-object answer with no tools (used for plans). */
  completeJson(messages: ChatMessage[], signal?: AbortSignal, turn?: TurnOptions): Promise<ChatCompletion>;
}

/**
 * The LLM client. Retries have one owner, the official `openai` SDK: it retries 408/409/429/5xx, timeouts
 * and connection errors with exponential backoff and jitter, honouring `retry-after`/`retry-after-ms`.
 * The loop never retries an LLM call itself.
 */
export function createLlmClient(llmOptions: LlmOptions): LlmClient {
  const options = resolveLlmOptions(llmOptions);
  const client = new OpenAI({
    apiKey: options.apiKey,
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    timeout: options.timeoutMs,
    maxRetries: options.maxRetries,
    // No redirects, and no window: Node's fetch then sends the request as it is. Any other request it
    // copies first, to follow a redirect with it, and the copy tees the request's body into two streams.
    fetchOptions: { redirect: 'error', window: null },
  });
  const maxTokens = options.maxOutputTokens;
  const streamed = options.stream;
  const requestOptions = (signal: AbortSignal | undefined, turn: TurnOptions | undefined) => ({
    ...(signal ? { signal } : {}),
    ...(turn?.maxRetries !== undefined ? { maxRetries: turn.maxRetries } : {}),
  });
  const server = serverOf(client.baseURL);
  const traced = (output: 'text' | 'json', call: () => Promise<ChatCompletion>) =>
    tracer.startActiveSpan(
      `chat ${options.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.system': 'openai',
          'gen_ai.request.model': options.model,
          'gen_ai.request.max_tokens': maxTokens,
          'gen_ai.output.type': output,
          ...server,
        },
      },
      (span) => endModelSpan(span, call()),
    );
  return {
    model: options.model,
    baseURL: client.baseURL,
    complete: (messages, tools, signal, onDelta, turn) => {
      const params = {
        model: options.model,
        messages,
        ...(tools.length > 0 ? { tools, tool_choice: 'auto' as const } : {}),
        ...(turn?.responseFormat ? { response_format: turn.responseFormat } : {}),
        max_tokens: turn?.maxOutputTokens ?? maxTokens,
      };
      return traced(turn?.responseFormat ? 'json' : 'text', () =>
        streamed
          ? streamCompletion(client, params, {
              maxRetries: turn?.maxRetries ?? options.maxRetries,
              idleMs: options.timeoutMs,
              ...requestOptions(signal, turn),
              ...(onDelta ? { onDelta } : {}),
            })
          : client.chat.completions.create(params, requestOptions(signal, turn)),
      );
    },
    completeJson: (messages, signal, turn) =>
      traced('json', () =>
        client.chat.completions.create(
          {
            model: options.model,
            messages,
            response_format: { type: 'json_object' },
            max_tokens: turn?.maxOutputTokens ?? maxTokens,
          },
          requestOptions(signal, turn),
        ),
      ),
  };
}

/**
 * Ends a model call's span with what the answer says, in the GenAI semantic conventions' terms (the SDK's
 * own retries are inside it). A span that records nothing (traces off) is ended without reading anything.
 */
async function endModelSpan(span: Span, answer: Promise<ChatCompletion>): Promise<ChatCompletion> {
  try {
    const res = await answer;
    if (span.isRecording()) {
      span.setAttributes({
        ...(typeof res.id === 'string' ? { 'gen_ai.response.id': res.id } : {}),
        ...(typeof res.model === 'string' ? { 'gen_ai.response.model': res.model } : {}),
        ...(typeof res.usage?.prompt_tokens === 'number'
          ? { 'gen_ai.usage.input_tokens': res.usage.prompt_tokens }
          : {}),
        ...(typeof res.usage?.completion_tokens === 'number'
          ? { 'gen_ai.usage.output_tokens': res.usage.completion_tokens }
          : {}),
        'gen_ai.response.finish_reasons': (Array.isArray(res.choices) ? res.choices : []).map((c) =>
          String(c?.finish_reason ?? ''),
        ),
      });
    }
    return res;
  } catch (err) {
    const e = err as { status?: unknown; name?: unknown; message?: unknown };
    failSpan(
      span,
      typeof e.status === 'number' ? String(e.status) : typeof e.name === 'string' ? e.name : 'Error',
      typeof e.message === 'string' ? e.message.slice(0, 500) : undefined,
    );
    throw err;
  } finally {
    span.end();
  }
}

/** `server.address` and `server.port` of the model's endpoint. */
function serverOf(baseURL: string): Record<string, string | number> {
  try {
    const url = new URL(baseURL);
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return { 'server.address': url.hostname, 'server.port': port };
  } catch {
    return {};
  }
}

/**
 * An error's message followed by those of its causes: the SDK says "Connection error." of anything that
 * kept the request from being answered, and only the causes say what it was (`fetch failed: unexpected
 * redirect`, `connect ECONNREFUSED 127.0.0.1:8000`).
 */
export function withCauses(err: unknown): string {
  const parts: string[] = [];
  let at: unknown = err;
  for (let depth = 0; at !== undefined && at !== null && depth < 4; depth += 1) {
    const message = at instanceof Error ? at.message : String(at);
    if (message && !parts.includes(message)) parts.push(message);
    at = at instanceof Error ? at.cause : undefined;
  }
  // "Connection error.: fetch failed" reads as "Connection error: fetch failed".
  return (
    parts.map((part, i) => (i < parts.length - 1 ? part.replace(/\.$/, '') : part)).join(': ') || String(err)
  );
}
