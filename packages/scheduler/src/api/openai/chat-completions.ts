import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RunOutcome } from '@agent-reach/protocol';
import type { ApiContext } from '../options.js';
import { readChatRequest, type ChatRequest } from './chat-request.js';
import { runFailed, RUN_ID_HEADER, serveDoorRequest, type RunFollower } from './door-run.js';
import { clientGone, openSse } from './sse.js';
import { subscribeLiveAnswer, type LiveAnswer } from './live-answer.js';

const finishReason = (outcome: RunOutcome) =>
  outcome.reason === 'final_answer_truncated' ? ('length' as const) : ('stop' as const);

/** What every chunk and the completion share: the id (from the run's), the creation time, the model. */
function identity(runId: string, agent: string) {
  return { id: `chatcmpl-${runId}`, created: Math.floor(Date.now() / 1000), model: agent };
}

/**
 * `POST /v1/chat/completions`: the last user message starts a durable run of the agent named by
 * `model`, and the run's answer is the completion — whole, or streamed as `chat.completion.chunk`s as
 * the model writes it. A client that goes away stops only the waiting: the run goes on and is recorded.
 */
export function chatCompletion(
  ctx: ApiContext,
  follower: RunFollower,
  request: FastifyRequest<{ Headers: { traceparent?: string } }>,
  reply: FastifyReply,
): Promise<unknown> {
  return serveDoorRequest(ctx, follower, request, reply, {
    read: readChatRequest,
    whole: (runId, chat, outcome) => ({
      ...identity(runId, chat.agent),
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: outcome.answer ?? '', refusal: null },
          logprobs: null,
          finish_reason: finishReason(outcome),
        },
      ],
      usage: outcome.usage,
    }),
    stream: (runId, chat, r) => streamCompletion(ctx, follower, chat, runId, r),
  });
}

/**
 * Streams a run's answer as chat completion chunks: the role first (so the client has the headers and
 * the run id at once), a comment for each run event, the answer's text live as the model streams it
 * (then whatever of the recorded answer it did not carry), the finish reason,
 * the usage when asked, `[DONE]`. A run that ended without an answer sends an `error` message instead of
 * `[DONE]`.
 */
async function streamCompletion(
  ctx: ApiContext,
  follower: RunFollower,
  chat: ChatRequest,
  runId: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const gone = clientGone(reply);
  const sse = openSse(reply, { [RUN_ID_HEADER]: runId });
  const base = { ...identity(runId, chat.agent), object: 'chat.completion.chunk' };
  const chunk = (delta: object, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(chat.includeUsage ? { usage: null } : {}),
  });
  let live: LiveAnswer | undefined;
  try {
    sse.data(chunk({ role: 'assistant', content: '' }));
    live = await subscribeLiveAnswer(ctx, runId, (text) => sse.data(chunk({ content: text })), chat);
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
      sse.data(runFailed(runId, outcome).toBody());
      return reply;
    }
    // The recorded answer is the truth: what its live text did not carry yet is sent now.
    for (const piece of live.rest(outcome.answer ?? '')) sse.data(chunk({ content: piece }));
    sse.data(chunk({}, finishReason(outcome)));
    if (chat.includeUsage) sse.data({ ...base, choices: [], usage: outcome.usage });
    sse.data('[DONE]');
    return reply;
  } finally {
    live?.close();
    sse.end();
  }
}
