import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RunOutcome } from '@agent-reach/protocol';
import type { ApiContext } from '../options.js';
import { runFailed, RUN_ID_HEADER, serveDoorRequest, type RunFollower } from './door-run.js';
import { readResponsesRequest, type ResponsesRequest } from './responses-request.js';
import { clientGone, openSse } from './sse.js';
import { subscribeLiveAnswer, type LiveAnswer } from './live-answer.js';

type Status = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** A `response` object of the Responses API for a run; `text` is its answer once it has one. */
function responseObject(runId: string, req: ResponsesRequest, status: Status, outcome?: RunOutcome) {
  const text = outcome?.status === 'succeeded' ? (outcome.answer ?? '') : undefined;
  const failure = outcome && outcome.status !== 'succeeded' ? runFailed(runId, outcome) : undefined;
  return {
    id: `resp_${runId}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: req.agent,
    output: text === undefined ? [] : [messageItem(runId, text, 'completed')],
    output_text: text ?? '',
    error: failure ? { code: failure.code, message: failure.message } : null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: null,
    metadata: req.metadata,
    parallel_tool_calls: false,
    temperature: null,
    top_p: null,
    tool_choice: 'none',
    tools: [],
    text: { format: { type: 'text' } },
    usage: outcome
      ? {
          input_tokens: outcome.usage.prompt_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: outcome.usage.completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: outcome.usage.total_tokens,
        }
      : null,
  };
}

function messageItem(runId: string, text: string, status: 'in_progress' | 'completed') {
  return {
    id: `msg_${runId}`,
    type: 'message',
    role: 'assistant',
    status,
    content: status === 'completed' ? [outputText(text)] : [],
  };
}
const outputText = (text: string) => ({ type: 'output_text', text, annotations: [] });

const statusOf = (outcome: RunOutcome): Status =>
  outcome.status !== 'succeeded'
    ? 'failed'
    : outcome.reason === 'final_answer_truncated'
      ? 'incomplete'
      : 'completed';

/**
 * `POST /v1/responses`: as `POST /v1/chat/completions`, text in (a string or messages) and text out,
 * whole (`output_text`) or streamed as Responses API events ending `response.completed`.
 */
export function createResponse(
  ctx: ApiContext,
  follower: RunFollower,
  request: FastifyRequest<{ Headers: { traceparent?: string } }>,
  reply: FastifyReply,
): Promise<unknown> {
  return serveDoorRequest(ctx, follower, request, reply, {
    read: readResponsesRequest,
    whole: (runId, req, outcome) => responseObject(runId, req, statusOf(outcome), outcome),
    stream: (runId, req, r) => streamResponse(ctx, follower, req, runId, r),
  });
}

/**
 * Streams a run as Responses API events: `response.created`, `response.in_progress`, a comment for each
 * run event, then once the run recorded its answer the output item, its text in
 * `response.output_text.delta` pieces, and `response.completed` (or `response.failed`).
 */
async function streamResponse(
  ctx: ApiContext,
  follower: RunFollower,
  req: ResponsesRequest,
  runId: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const gone = clientGone(reply);
  const sse = openSse(reply, { [RUN_ID_HEADER]: runId });
  let sequence = 0;
  const send = (type: string, fields: object) =>
    sse.data({ type, sequence_number: sequence++, ...fields }, type);
  const item = { item_id: `msg_${runId}`, output_index: 0 };
  // The output item opens at the answer's first text, live or recorded.
  let opened = false;
  const open = () => {
    if (opened) return;
    opened = true;
    send('response.output_item.added', { output_index: 0, item: messageItem(runId, '', 'in_progress') });
    send('response.content_part.added', { ...item, content_index: 0, part: outputText('') });
  };
  const delta = (text: string) => {
    open();
    send('response.output_text.delta', { ...item, content_index: 0, delta: text, logprobs: [] });
  };
  let live: LiveAnswer | undefined;
  try {
    send('response.created', { response: responseObject(runId, req, 'in_progress') });
    send('response.in_progress', { response: responseObject(runId, req, 'in_progress') });
    live = await subscribeLiveAnswer(ctx, runId, delta, req);
    const outcome = await follower.follow(
      runId,
      gone.signal,
      async (event) => live?.recorded(event, () => sse.comment(event.type)),
      live.hooks,
    );
    if (!outcome) {
      ctx.log.info({ runId, door: 'openai' }, 'openai client gone mid-stream: the run goes on');
      return reply;
    }
    if (outcome.status !== 'succeeded') {
      send('response.failed', { response: responseObject(runId, req, 'failed', outcome) });
      return reply;
    }
    const text = outcome.answer ?? '';
    // The recorded answer is the truth: what its live text did not carry yet is sent now.
    for (const piece of live.rest(text)) delta(piece);
    open();
    send('response.output_text.done', { ...item, content_index: 0, text, logprobs: [] });
    send('response.content_part.done', { ...item, content_index: 0, part: outputText(text) });
    send('response.output_item.done', { output_index: 0, item: messageItem(runId, text, 'completed') });
    const status = statusOf(outcome);
    send(status === 'incomplete' ? 'response.incomplete' : 'response.completed', {
      response: responseObject(runId, req, status, outcome),
    });
    return reply;
  } finally {
    live?.close();
    sse.end();
  }
}
