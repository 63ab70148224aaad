import AjvModule from 'ajv';
import { Type, type Static } from '@sinclair/typebox';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  CreateRunBody,
  CreateRunHeaders,
  isFinalStatus,
  MAX_INPUT_CHARS,
  MAX_METADATA_ENTRIES,
  type RunOutcome,
} from '@agent-reach/protocol';
import type { AgentSpec } from '@agent-reach/shared';
import type { Principal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { checkRunRequest } from '../run-request.js';
import { admitToSession } from '../session-access.js';
import { startRun } from '../start-run.js';
import type { McpCallRef, McpCallRegistry } from './call-registry.js';
import { followRun } from './follow-run.js';
import { createRunProgress } from './run-progress.js';
import { structuredOutputOf } from './structured-output.js';

const Ajv = AjvModule.default;

/** The arguments of every agent's tool: what `POST /v1/runs` takes besides the agent and the model. */
export const AgentToolInput = Type.Object(
  {
    input: CreateRunBody.properties.input,
    session_id: CreateRunBody.properties.session_id,
    metadata: CreateRunBody.properties.metadata,
  },
  { additionalProperties: false },
);
type AgentToolInput = Static<typeof AgentToolInput>;

/** The metadata key that records which door started a run, and this door's value. */
export const DOOR_METADATA_KEY = 'door';
export const MCP_DOOR = 'mcp';

// Strict as a request body: no coercion, no dropped properties.
const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false, removeAdditional: false });
const validInput = ajv.compile<AgentToolInput>(AgentToolInput);
const validIdempotencyKey = ajv.compile<string>(CreateRunHeaders.properties['idempotency-key']);

/** One call of an agent's tool. */
export interface AgentCall {
  agent: AgentSpec;
  /** The tool call's arguments, as the client sent them. */
  arguments: unknown;
  /** Stops following the run (the client went away, the server closes); the run goes on. */
  signal: AbortSignal;
  /** Reports a step of the run; absent when the client asked for no progress. */
  progress?: (message: string) => Promise<void>;
  /** The call's id, for its cancellation; absent when the client has no session. */
  ref?: McpCallRef;
  idempotencyKey?: unknown;
  traceparent?: string;
}

const text = (t: string) => [{ type: 'text' as const, text: t }];
const runMeta = (runId: string, extra: Record<string, string> = {}) => ({
  'agent-reach/run_id': runId,
  ...extra,
});

/** A call refused before any run started, with the API's code (as the REST door would answer it). */
function refused(err: ApiError): CallToolResult {
  return {
    isError: true,
    content: text(`${err.code}: ${err.message}`),
    _meta: { 'agent-reach/error_code': err.code },
  };
}

/** The MCP result of a run that ended: its answer, or `isError` with why it did not answer. */
export function runResult(agent: AgentSpec, runId: string, outcome: RunOutcome): CallToolResult {
  const _meta = runMeta(runId, {
    'agent-reach/status': outcome.status,
    'agent-reach/reason': outcome.reason,
  });
  if (outcome.status !== 'succeeded') {
    const report = outcome.report ? `: ${outcome.report}` : '';
    return {
      isError: true,
      content: text(`run ${runId} ${outcome.status} (${outcome.reason})${report}`),
      _meta,
    };
  }
  const answer = outcome.answer ?? '';
  const structured = structuredOutputOf(agent)?.parse(answer);
  return { content: text(answer), ...(structured ? { structuredContent: structured } : {}), _meta };
}

/** The run's request from the tool's arguments, checked as `POST /v1/runs` checks its body. */
function runRequest(call: AgentCall): AgentToolInput & { metadata: Record<string, string> } {
  const input = (call.arguments as { input?: unknown } | null | undefined)?.input;
  // Over the cap by characters is an input too long, as by tokens, not a schema mismatch.
  if (typeof input === 'string' && input.length > MAX_INPUT_CHARS)
    throw new ApiError(
      'INPUT_TOO_LONG',
      `input has ${input.length} characters; at most ${MAX_INPUT_CHARS} are accepted`,
      [{ in: 'body', path: '/input', chars: input.length, limit: MAX_INPUT_CHARS }],
    );
  if (!validInput(call.arguments)) {
    const first = validInput.errors?.[0];
    const where = `arguments${first?.instancePath ?? ''}`;
    throw new ApiError('VALIDATION_FAILED', `${where} ${first?.message ?? 'is invalid'}`);
  }
  const args = call.arguments;
  if (args.metadata && Object.hasOwn(args.metadata, DOOR_METADATA_KEY))
    throw new ApiError(
      'VALIDATION_FAILED',
      `arguments/metadata/${DOOR_METADATA_KEY} is recorded by the server (${MCP_DOOR})`,
    );
  if (Object.keys(args.metadata ?? {}).length >= MAX_METADATA_ENTRIES)
    throw new ApiError(
      'VALIDATION_FAILED',
      `arguments/metadata may hold ${MAX_METADATA_ENTRIES - 1} entries (one is the door)`,
    );
  if (call.idempotencyKey !== undefined && !validIdempotencyKey(call.idempotencyKey))
    throw new ApiError(
      'VALIDATION_FAILED',
      '_meta/agent-reach/idempotency_key is not a valid Idempotency-Key',
    );
  return { ...args, metadata: { ...args.metadata, [DOOR_METADATA_KEY]: MCP_DOOR } };
}

/**
 * Runs one call of an agent's tool: starts a durable run through the same door code as `POST /v1/runs`
 * (checks, limits, sessions, idempotency), records it under the call's id for cancellation, reports
 * each step as progress, and answers with the run's outcome. A refusal is an `isError` result with the
 * API's code; the run id is in every progress message and in the result's `_meta`.
 */
export async function callAgent(
  ctx: ApiContext,
  principal: Principal,
  registry: McpCallRegistry,
  call: AgentCall,
): Promise<CallToolResult> {
  let runId: string;
  try {
    const req = runRequest(call);
    checkRunRequest(ctx, req);
    if (req.session_id !== undefined) await admitToSession(ctx, principal, req.session_id, call.agent.name);
    const { run } = await startRun(
      ctx,
      principal,
      { agent: call.agent.name, ...req },
      call.idempotencyKey as string | undefined,
      call.traceparent,
    );
    runId = run.run_id;
  } catch (err) {
    if (err instanceof ApiError && err.statusCode < 500) return refused(err);
    throw err;
  }
  const log = ctx.log.child({ runId, agent: call.agent.name, door: MCP_DOOR });
  const progress = async (message: string) => {
    // A client that went away cannot be told; the run goes on.
    await call.progress?.(message).catch((err: unknown) => log.debug({ err }, 'mcp progress not sent'));
  };
  if (call.ref && (await registry.started(call.ref, runId)) === 'cancelled') {
    log.info('mcp call cancelled before its run was recorded: cancelling the run');
    await ctx.deps.control.cancel(runId);
  }
  await progress(`${runId}: queued`);
  const steps = createRunProgress(runId);
  const outcome = await followRun(ctx, runId, call.signal, async (event) => {
    for (const message of steps(event)) await progress(message);
  });
  if (!outcome) {
    // The call's record stays (until it expires): a client that comes back may still cancel the run.
    log.info('mcp client gone: the run goes on');
    return {
      isError: true,
      content: text(`stopped waiting for run ${runId}; it goes on`),
      _meta: runMeta(runId),
    };
  }
  if (call.ref) await registry.finished(call.ref).catch(() => undefined);
  return runResult(call.agent, runId, outcome);
}

/** Cancels the run of a call the client cancelled, unless it ended already. */
export async function cancelCallRun(ctx: ApiContext, runId: string): Promise<boolean> {
  const summary = await ctx.deps.control.store.summary(runId);
  if (summary && isFinalStatus(summary.status)) return false;
  await ctx.deps.control.cancel(runId);
  return true;
}
