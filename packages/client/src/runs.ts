import { isFinalStatus } from '@agent-reach/protocol';
import type {
  CreateRunInput,
  DecisionOptions,
  ListRunsFilter,
  StreamOptions,
  WaitOptions,
} from './client-api.js';
import { resolveWaitOptions } from './options.js';
import { call, idempotencyHeaders, query, stream, type ClientContext } from './request.js';
import type { Decision, OutputOf, Run, RunList, StreamedAnswerDelta, StreamedEvent } from './types.js';
import { follow } from './wait.js';

export const runPath = (id: string): string => `/v1/runs/${encodeURIComponent(id)}`;

/** The body that starts a run, shared by `POST /v1/runs` and a session's messages. */
export const runBody = (i: Omit<CreateRunInput, 'sessionId' | 'idempotencyKey'>) => ({
  agent: i.agent,
  input: i.input,
  ...(i.metadata ? { metadata: i.metadata } : {}),
  ...(i.model ? { model: i.model } : {}),
  // JSON text of the schema: a TypeBox schema's symbol keys are not part of it.
  ...(i.outputSchema === undefined
    ? {}
    : { output_schema: JSON.parse(JSON.stringify(i.outputSchema)) as unknown }),
  ...(i.grants ? { grants: i.grants } : {}),
  ...(i.callback ? { callback: i.callback } : {}),
  ...(i.variant ? { variant: i.variant } : {}),
});

export const createRun = <S>(ctx: ClientContext, i: CreateRunInput<S>) =>
  call<Run<OutputOf<S>>>(ctx, 'POST', '/v1/runs', {
    body: { ...runBody(i), ...(i.sessionId ? { session_id: i.sessionId } : {}) },
    ...idempotencyHeaders(i.idempotencyKey),
  });

export function listRuns(ctx: ClientContext, f: ListRunsFilter = {}): Promise<RunList> {
  const { metadata, traceId, errorKind, ...rest } = f;
  const [pair, ...more] = Object.entries(metadata ?? {});
  if (more.length > 0) throw new TypeError('listRuns: filter by one metadata pair');
  return call<RunList>(
    ctx,
    'GET',
    `/v1/runs${query({
      ...rest,
      trace_id: traceId,
      error_kind: errorKind,
      metadata: pair ? `${pair[0]}=${pair[1]}` : undefined,
    })}`,
  );
}

export const streamEvents = (ctx: ClientContext, runId: string, o?: StreamOptions) =>
  stream<StreamedEvent | StreamedAnswerDelta>(ctx, `${runPath(runId)}/events`, o);

export const waitForRun = <O>(ctx: ClientContext, runId: string, o?: WaitOptions) =>
  follow(
    {
      what: `run ${runId}`,
      get: (signal) => call<Run<O>>(ctx, 'GET', runPath(runId), { signal }),
      isFinal: (r) => isFinalStatus(r.status),
      stream: (so) => streamEvents(ctx, runId, so),
      lastType: 'run_finished',
    },
    resolveWaitOptions(o),
  );

export const decide = (
  ctx: ClientContext,
  runId: string,
  toolCallId: string,
  decision: 'approve' | 'reject',
  o: DecisionOptions = {},
) =>
  call<Decision>(ctx, 'POST', `${runPath(runId)}/approvals`, {
    body: {
      tool_call_id: toolCallId,
      decision,
      ...(o.reason ? { reason: o.reason } : {}),
      ...(o.by ? { by: o.by } : {}),
    },
  });
