import type { ToolErrorInfo, ToolErrorKind } from './errors.js';
import { checkVersion, renameVersion1Fields, WIRE_VERSION } from './version.js';

/** The W3C trace context a tool-call job carries from the span that published it to its executor. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** Data of one tool-call job on a tool queue. Plain JSON: it crosses Redis. */
export interface ToolCallJob {
  /**
   * Wire version: {@link WIRE_VERSION}. Version 1 (and jobs without `v`, of the release before it) named
   * the same fields in camelCase; {@link readToolCallJob} reads both.
   */
  v: number;
  run_id: string;
  trace_id: string;
  agent: string;
  tool_call_id: string;
  name: string;
  /** The model's raw argument string, parsed and validated only by the executor. */
  arguments: string;
  /** Epoch ms after which the dispatcher no longer waits; a job picked up later is answered `timeout` unrun. */
  deadline: number;
  /** Redis list the result is pushed to (the publishing dispatcher's own). */
  reply_to: string;
  /** Epoch ms of publication, for queue-wait metrics. */
  enqueued_at: number;
  /** W3C trace context of the span that published the call, when traces are exported; the executor continues it. */
  trace?: TraceCarrier;
  /**
   * Ignored, and no longer sent: an executor runs a `requiresConfirmation` tool only on the decision
   * recorded in the run's approvals, never on what a job says. Kept so that older jobs still parse.
   */
  approval?: { by?: string; reason?: string; at: number };
  /**
   * Argument aliases of this call's run (its variant's, for this tool): argument → alias → value. The
   * executor applies them beside the tool's own before validation; they change nothing else.
   */
  argument_aliases?: Record<string, Record<string, string>>;
}

/** The outcome of one tool call, as the model sees it (serialized as the `tool` message content). */
export interface ToolResult {
  tool_call_id: string;
  name: string;
  ok: boolean;
  status: 'ok' | 'error';
  content?: unknown;
  /** Present when the handler succeeded but found nothing; `content.hint` says what to try. */
  no_result?: true;
  truncated?: true;
  /** Present with `truncated`: what was cut and how to fetch the rest (the `ref`, with `get_full_result`). */
  notice?: string;
  /** Id under which the full result is kept for `get_full_result`. */
  ref?: string;
  /** The arguments the call ran with, when the tool's argument aliases changed what the model sent. */
  normalized_arguments?: Record<string, unknown>;
  error?: ToolErrorInfo;
  duration_ms: number;
  /** Attempts the executor made: kept in the record, the API and events; left out of the model's message. */
  attempts: number;
  /**
   * Each attempt's timing and outcome, present when the executor tried more than once (one attempt is the
   * call's own duration and outcome). Kept with `attempts` for people; left out of the model's message.
   */
  attempt_log?: AttemptTiming[];
  /**
   * The executor that ran the call, recorded with the result for people (API, inspector); the run
   * takes it off before the model sees the result.
   */
  executor_id?: string;
}

/** One attempt of a call by the executor, on the call's own clock. */
export interface AttemptTiming {
  /** 1 for the first try. */
  attempt: number;
  /** When the attempt started, in ms after the executor took the call (backoffs lie between attempts). */
  offset_ms: number;
  duration_ms: number;
  /** `ok`, or the error kind the attempt ended with. */
  outcome: 'ok' | ToolErrorKind;
}

/**
 * The `tool` message content the model reads of a result: everything but the executor's attempts and their
 * timings (its retries are invisible to the model), which executor ran it and an error's `detail` (all stay
 * in the record).
 */
export function toolMessageContent(result: ToolResult): string {
  const { attempts: _attempts, attempt_log: _log, executor_id: _executor, ...forModel } = result;
  if (forModel.error?.detail !== undefined) {
    const { detail: _detail, ...error } = forModel.error;
    return JSON.stringify({ ...forModel, error });
  }
  return JSON.stringify(forModel);
}

/**
 * BullMQ job id of a tool call: derived from the run and the call so that publishing the same call twice
 * never enqueues it twice. BullMQ ids may not contain `:`, so it is replaced.
 */
export function toolJobId(runId: string, toolCallId: string): string {
  return `${runId}.${toolCallId}`.replace(/:/g, '_');
}

/** A failed result built without running anything (unknown tool, timeout in the dispatcher, …). */
export function errorResult(
  call: { toolCallId: string; name: string },
  error: ToolErrorInfo,
  extra: { duration_ms?: number; attempts?: number } = {},
): ToolResult {
  return {
    tool_call_id: call.toolCallId,
    name: call.name,
    ok: false,
    status: 'error',
    error,
    duration_ms: extra.duration_ms ?? 0,
    attempts: extra.attempts ?? 0,
  };
}

/**
 * What an executor pushes to a job's `replyTo` list: the call's result, naming its run (tool call ids are
 * unique only within a run). Executors write it as {@link replyPrefix} + the result's JSON + `}` (the result
 * may be the recorded one, already serialized, so it is not parsed again); dispatchers read it with
 * {@link parseReply}.
 */
export interface ToolReply {
  v: typeof WIRE_VERSION;
  run_id: string;
  result: ToolResult;
}

/** The reply envelope up to its result: the result's JSON and a closing `}` follow. */
export function replyPrefix(runId: string): string {
  return `{"v":${WIRE_VERSION},"run_id":${JSON.stringify(runId)},"result":`;
}

/** The reply of a result, serialized. */
export function serializeReply(runId: string, resultJson: string): string {
  return `${replyPrefix(runId)}${resultJson}}`;
}

/**
 * Reads a reply; throws `UnsupportedVersionError` for a version this release does not read. Replies of the
 * previous release (`{"runId":…,"result":…}`, no version) are read as version 1.
 */
export function parseReply(raw: string): ToolReply {
  const reply = JSON.parse(raw) as Partial<ToolReply> & { runId?: string };
  checkVersion('tool-call reply', reply);
  return {
    v: WIRE_VERSION,
    run_id: reply.run_id ?? reply.runId ?? '',
    result: reply.result as ToolResult,
  };
}

/** Version-1 field names of a tool-call job, and their names since version 2. */
const TOOL_CALL_JOB_V1_FIELDS = {
  runId: 'run_id',
  traceId: 'trace_id',
  toolCallId: 'tool_call_id',
  replyTo: 'reply_to',
  enqueuedAt: 'enqueued_at',
} as const;

/**
 * A tool-call job's data in this release's shape: a version-1 job (camelCase, with or without `v`) is
 * renamed field by field; any other version throws `UnsupportedVersionError`. Fields are not checked
 * here: the reader checks each one it uses.
 */
export function readToolCallJob(data: unknown): Partial<Record<keyof ToolCallJob, unknown>> {
  if (typeof data !== 'object' || data === null) return {};
  const d = data as Record<string, unknown>;
  checkVersion('tool-call job', d);
  if (d.v !== undefined && d.v !== 1) return d;
  return renameVersion1Fields(d, TOOL_CALL_JOB_V1_FIELDS);
}
