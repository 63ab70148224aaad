import { MAX_METADATA_ENTRIES, type RunEvent, type RunOutcome } from '@agent-reach/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requirePrincipal, type Principal } from '../auth.js';
import { ApiError } from '../errors.js';
import { followRun, type FollowHooks } from '../mcp/follow-run.js';
import type { ApiContext } from '../options.js';
import { checkRunRequest } from '../run-request.js';
import { admitToSession } from '../session-access.js';
import { startRun } from '../start-run.js';
import { badParam, fromApiError, modelNotFound, OpenAiError, sendOpenAiError } from './openai-error.js';
import { clientGone } from './sse.js';

/** The metadata key that records which door started a run, and this door's value. */
export const DOOR_METADATA_KEY = 'door';
export const OPENAI_DOOR = 'openai';
/** The response header that names the run a request started. */
export const RUN_ID_HEADER = 'x-agent-reach-run-id';

/** A run as the OpenAI-compatible door asks for one. */
export interface DoorRunRequest {
  agent: string;
  input: string;
  sessionId?: string;
  metadata: Record<string, string>;
  /** The output schema the request's response format asks for. */
  outputSchema?: Record<string, unknown>;
}

/**
 * Starts a run through the same door code as `POST /v1/runs` (input limits, sessions, the run job), with
 * metadata `door: openai`. An agent the key may not use is the 404 of an unknown model; the other
 * refusals keep the API's code, lower case, in OpenAI's error shape.
 */
export async function startDoorRun(
  ctx: ApiContext,
  principal: Principal,
  req: DoorRunRequest,
  traceparent?: string,
): Promise<string> {
  const allowed = !principal.agents || principal.agents.has(req.agent);
  if (!allowed || !ctx.deps.agents.agents.has(req.agent)) throw modelNotFound(req.agent);
  if (Object.hasOwn(req.metadata, DOOR_METADATA_KEY))
    throw badParam(
      `metadata.${DOOR_METADATA_KEY}`,
      `metadata.${DOOR_METADATA_KEY} is recorded by the server (${OPENAI_DOOR})`,
    );
  if (Object.keys(req.metadata).length >= MAX_METADATA_ENTRIES)
    throw badParam('metadata', `metadata may hold ${MAX_METADATA_ENTRIES - 1} entries (one is the door)`);
  try {
    checkRunRequest(ctx, { input: req.input });
    if (req.sessionId !== undefined) await admitToSession(ctx, principal, req.sessionId, req.agent);
    const { run } = await startRun(
      ctx,
      principal,
      {
        agent: req.agent,
        input: req.input,
        ...(req.sessionId === undefined ? {} : { session_id: req.sessionId }),
        metadata: { ...req.metadata, [DOOR_METADATA_KEY]: OPENAI_DOOR },
        ...(req.outputSchema ? { output_schema: req.outputSchema } : {}),
      },
      undefined,
      traceparent,
    );
    return run.run_id;
  } catch (err) {
    if (err instanceof ApiError && err.statusCode < 500) throw fromApiError(err);
    throw err;
  }
}

/**
 * Follows a run until it ends, holding one of the server's event-stream slots (the same budget as
 * `GET /v1/runs/:id/events`): the outcome, or undefined when `signal` stopped the following (the run
 * goes on).
 */
export function createRunFollower(ctx: ApiContext) {
  let following = 0;
  return {
    /** Takes a slot, or throws a 429 when every slot is taken. */
    take(): () => void {
      if (following >= ctx.options.maxEventStreams)
        throw new OpenAiError(
          429,
          'too many runs followed at once; retry later',
          'rate_limit_error',
          null,
          'too_many_streams',
        );
      following += 1;
      let released = false;
      return () => {
        if (!released) following -= 1;
        released = true;
      };
    },
    follow(
      runId: string,
      signal: AbortSignal,
      onEvent: (event: RunEvent) => Promise<void> = async () => undefined,
      hooks?: FollowHooks,
    ): Promise<RunOutcome | undefined> {
      return followRun(ctx, runId, signal, onEvent, hooks);
    },
  };
}
export type RunFollower = ReturnType<typeof createRunFollower>;

/** A run that ended without an answer, as a 502 naming the run, its status and its reason. */
export function runFailed(runId: string, outcome: RunOutcome): OpenAiError {
  const report = outcome.report ? `: ${outcome.report}` : '';
  return new OpenAiError(
    502,
    `run ${runId} ${outcome.status} (${outcome.reason})${report}`,
    'server_error',
    null,
    `run_${outcome.status}`,
  );
}

/** How one route of the door reads its body and answers with a run. */
export interface DoorRoute<R extends DoorRunRequest & { stream: boolean }> {
  read(body: unknown): R;
  /** The whole answer of a run that answered. */
  whole(runId: string, req: R, outcome: RunOutcome): unknown;
  /** Streams the run on the reply (which it hijacks), following it with `follower`. */
  stream(runId: string, req: R, reply: FastifyReply): Promise<FastifyReply>;
}

/**
 * Serves one request of the door: reads it, takes a following slot, starts the run, names it in the
 * `x-agent-reach-run-id` header and answers whole or streamed. A client that goes away stops only the
 * waiting: the run goes on and is recorded.
 */
export async function serveDoorRequest<R extends DoorRunRequest & { stream: boolean }>(
  ctx: ApiContext,
  follower: RunFollower,
  request: FastifyRequest<{ Headers: { traceparent?: string } }>,
  reply: FastifyReply,
  route: DoorRoute<R>,
): Promise<unknown> {
  const principal = requirePrincipal(ctx.auth, request);
  const req = route.read(request.body);
  const release = follower.take();
  try {
    const runId = await startDoorRun(ctx, principal, req, request.headers.traceparent);
    reply.header(RUN_ID_HEADER, runId);
    if (req.stream) return await route.stream(runId, req, reply);
    const outcome = await follower.follow(runId, clientGone(reply).signal);
    if (!outcome) {
      ctx.log.info({ runId, door: OPENAI_DOOR }, 'openai client gone: the run goes on');
      return reply;
    }
    if (outcome.status !== 'succeeded') return sendOpenAiError(reply, runFailed(runId, outcome));
    return route.whole(runId, req, outcome);
  } finally {
    release();
  }
}
