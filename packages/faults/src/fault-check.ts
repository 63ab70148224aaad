import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import type { Queue } from 'bullmq';
import {
  FINAL_STATUSES as PROTOCOL_FINAL_STATUSES,
  foldStateRecord,
  resolveToolMessageRefs,
  type Keys,
} from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { effectFile, startsKey, type StartRecord } from './fault-tools.js';

export const FINAL_STATUSES: readonly string[] = PROTOCOL_FINAL_STATUSES;

/** The invariants every run must keep through any fault (and the few a scenario adds). */
export const INVARIANTS = {
  not_final: 'every accepted run reaches a final status (and is not left with a non-final record)',
  run_started: 'exactly one run_started event per run',
  run_finished: 'exactly one run_finished event per run',
  invalid_history: 'every stored history is a valid conversation',
  two_results: 'the model is never sent two different results for one tool_call_id of a run',
  timeout_never_started: 'no call is reported as a tool timeout that never started executing',
  unavailable_ran: 'no call the model was told did not run (unavailable, may be called again) ever started',
  invalid_model_request: 'the model is never sent a request it rejects as an invalid conversation',
  record_differs: 'the stored record of a call keeps the result the model saw',
  not_archived: 'with the archive on, every run that ended is archived exactly once (and no other run is)',
  archive_differs:
    'the archived record of a run is the record the API read live (listing, state, messages, decisions, results, events)',
  archive_entry_left:
    'with the archive on, no outbox entry is left once every run ended and was archived, and no run is dead-lettered (blocked)',
  live_read_failed:
    'every read of a run Redis holds (its record and its events) is answered, whatever PostgreSQL does',
  unclean_shutdown: 'SIGTERM ends every process cleanly (exit code 0) within its grace period',
  process_crashed: 'no scheduler or executor exits unless it is told to',
  callback_lost: 'every run that ended has its run.finished callback received at least once',
  callback_unsigned: "every callback received verifies with the client's verifyWebhook",
  callback_id_differs: 'every delivery of one event (run and type) carries the same webhook-id',
  schedule_firing_lost:
    'every slot of an interval schedule, from its first firing to its last, fires and starts its run',
  schedule_firing_doubled:
    'no slot of a schedule starts more than one run (and no run of it goes unrecorded)',
} as const;
export type Invariant = keyof typeof INVARIANTS;

export interface Violation {
  invariant: Invariant;
  /** The run (or, for process-level invariants, the process) it concerns. */
  subject: string;
  detail: string;
}

/** What an llm-sim recorded of one request (the fields the checker reads). */
export interface ModelRequest {
  status: number | null;
  body: unknown;
  response?: unknown;
}

interface Message {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; function?: { name: string } }>;
}

/** Execution starts per `<runId>/<toolCallId>`: the larger of the starts file's and Redis's counts. */
export async function readStarts(
  redis: RedisClient,
  keys: Keys,
  file?: string,
): Promise<Map<string, number>> {
  const starts = new Map<string, number>();
  if (file && existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      let record: StartRecord;
      try {
        record = JSON.parse(line) as StartRecord;
      } catch {
        continue; // a line being written right now
      }
      const key = `${record.runId}/${record.toolCallId}`;
      starts.set(key, (starts.get(key) ?? 0) + 1);
    }
  }
  const recorded = await redis.hgetall(startsKey(keys));
  for (const [key, n] of Object.entries(recorded)) starts.set(key, Math.max(starts.get(key) ?? 0, Number(n)));
  return starts;
}

/** The run a model request belongs to: its first user message is `fault run <runId>`. */
export function runOfRequest(body: unknown): string | undefined {
  const messages = (body as { messages?: Message[] } | null)?.messages;
  if (!Array.isArray(messages)) return undefined;
  const first = messages.find((m) => m?.role === 'user');
  const match = typeof first?.content === 'string' ? /^fault run (\S+)/.exec(first.content) : null;
  return match?.[1];
}

/** The input a run of the suite is started with (how its model requests are told apart). */
export const runInput = (runId: string): string => `fault run ${runId}`;

/** A run's stored state, its base and deltas folded (see protocol's state-record.ts); undefined if unreadable. */
function foldedState(text: string | null): Record<string, unknown> | undefined {
  try {
    return text ? foldStateRecord(text) : undefined;
  } catch {
    return undefined;
  }
}

function parseJson(text: unknown): unknown {
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const errorKind = (content: unknown): string | undefined =>
  (parseJson(content) as { error?: { kind?: string } } | undefined)?.error?.kind;

/** A tool result in a few words: its outcome and, for `recorded_effect`, which execution made it. */
function outline(result: unknown): string {
  const r = result as
    { ok?: boolean; error?: { kind?: string }; content?: { pid?: number; execution?: string } } | undefined;
  if (!r || typeof r !== 'object') return 'not a result';
  if (!r.ok) return `error ${r.error?.kind ?? '?'}`;
  const c = r.content;
  return c?.execution ? `ok, execution ${c.execution.slice(0, 8)} in pid ${c.pid}` : 'ok';
}

/** Problems of a history as a conversation: every call answered once, right after it, nothing repeated. */
export function historyProblems(messages: Message[]): string[] {
  const problems: string[] = [];
  const seenJson = new Map<string, number>();
  const everCalled = new Set<string>();
  const answered = new Set<string>();
  let open = new Set<string>();
  let openAt = -1;
  messages.forEach((m, i) => {
    const json = JSON.stringify(m);
    const before = seenJson.get(json);
    if (before !== undefined) {
      // Reported once, as what it is; the rest is judged as if the copy were not there.
      problems.push(`messages[${i}] (${m.role}) repeats messages[${before}]`);
      return;
    }
    seenJson.set(json, i);
    if (m.role === 'tool') {
      const id = m.tool_call_id ?? '';
      if (open.has(id)) {
        open.delete(id);
        answered.add(id);
      } else if (answered.has(id)) {
        problems.push(`messages[${i}] answers call ${id} again`);
      } else if (everCalled.has(id)) {
        problems.push(`messages[${i}] answers call ${id} after a later non-tool message`);
      } else {
        problems.push(`messages[${i}] answers unknown call ${id}`);
      }
      return;
    }
    if (open.size > 0) {
      problems.push(
        `messages[${i}] (${m.role}) comes before the calls of messages[${openAt}] are answered: ${[...open].join(', ')}`,
      );
      open = new Set();
    }
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      for (const call of m.tool_calls) {
        if (everCalled.has(call.id)) problems.push(`messages[${i}] makes call ${call.id} again`);
        everCalled.add(call.id);
        open.add(call.id);
      }
      openAt = i;
    }
  });
  if (open.size > 0)
    problems.push(`the calls of messages[${openAt}] are never answered: ${[...open].join(', ')}`);
  return problems;
}

export interface CheckInput {
  redis: RedisClient;
  keys: Keys;
  runIds: readonly string[];
  /** Every request llm-sim recorded during the scenario. */
  requests: readonly ModelRequest[];
  /** Execution starts per `<runId>/<toolCallId>` (see `readStarts`). */
  starts: ReadonlyMap<string, number>;
  /** The `agent-runs` queue, to say what became of the job of a run left non-final. */
  runsQueue: Queue;
}

type Add = (invariant: Invariant, subject: string, detail: string) => void;

/** A run's record as the checker reads it from Redis. */
interface RunRecord {
  runId: string;
  meta: Record<string, string>;
  status: string;
  events: Array<[string, string[]]>;
  /** The event types, in order. */
  types: Array<string | undefined>;
  messages: Message[];
  /** The results hash: tool call id → the recorded result (JSON). */
  recorded: Record<string, string>;
}

/**
 * Reads every run's records and llm-sim's requests and returns each broken invariant, per run, how
 * many runs have each status (as read in the same pass), and how many runs ended with each outcome other
 * than success (status, reason and the start of the report).
 */
export async function checkRuns(input: CheckInput): Promise<{
  violations: Violation[];
  statuses: Record<string, number>;
  outcomes: Record<string, number>;
}> {
  const { redis, keys, runIds, requests, starts, runsQueue } = input;
  const violations: Violation[] = [];
  const statuses: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  const add: Add = (invariant, subject, detail) => violations.push({ invariant, subject, detail });
  const sent = modelSent(requests, add);
  for (const runId of runIds) {
    const r = await readRecord(redis, keys, runId);
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    if (!FINAL_STATUSES.includes(r.status)) {
      const job = await runsQueue.getJobState(runId);
      add('not_final', runId, `status ${r.status}, its job ${job}`);
    }
    checkEvents(r, add, outcomes);
    checkHistory(r, add);
    const seen = sent.get(runId) ?? new Map<string, string[]>();
    checkResults(r, seen, add);
    checkTimeouts(r, seen, starts, add);
    checkNotRun(r, seen, starts, add);
  }
  return { violations, statuses, outcomes };
}

/**
 * What the model was sent, per run and call: every distinct result content. A request llm-sim rejected
 * as an invalid conversation is a violation of its own.
 */
function modelSent(requests: readonly ModelRequest[], add: Add): Map<string, Map<string, string[]>> {
  const sent = new Map<string, Map<string, string[]>>();
  for (const r of requests) {
    const runId = runOfRequest(r.body);
    if (runId === undefined) continue;
    if (r.status === 400) {
      const message = (r.response as { error?: { message?: string } } | null)?.error?.message ?? '';
      add('invalid_model_request', runId, `llm-sim answered 400: ${message}`);
    }
    const messages = (r.body as { messages: Message[] }).messages;
    const calls = sent.get(runId) ?? new Map<string, string[]>();
    sent.set(runId, calls);
    for (const m of messages) {
      if (m.role !== 'tool' || typeof m.tool_call_id !== 'string') continue;
      const contents = calls.get(m.tool_call_id) ?? [];
      const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
      if (!contents.includes(content)) contents.push(content);
      calls.set(m.tool_call_id, contents);
    }
  }
  return sent;
}

async function readRecord(redis: RedisClient, keys: Keys, runId: string): Promise<RunRecord> {
  const [[, meta], [, events], [, stored], [, recorded]] = (await redis
    .multi()
    .hgetall(keys.runMeta(runId))
    .xrange(keys.runEvents(runId), '-', '+')
    .lrange(keys.runMessages(runId), 0, -1)
    .hgetall(keys.results(runId))
    .exec()) as [
    [null, Record<string, string>],
    [null, Array<[string, string[]]>],
    [null, string[]],
    [null, Record<string, string>],
  ];
  const types = events.map(([, fields]) => {
    const i = fields.indexOf('e');
    return (parseJson(i >= 0 ? fields[i + 1] : undefined) as { type?: string } | undefined)?.type;
  });
  return {
    runId,
    meta,
    status: meta.status ?? '(no record)',
    events,
    types,
    // Tool messages stored as references to the results hash, made whole.
    messages: resolveToolMessageRefs(stored, recorded).map((m) => parseJson(m) as Message),
    recorded,
  };
}

/** One run_started and one run_finished; the outcome of a run that ended other than succeeded, counted. */
function checkEvents(r: RunRecord, add: Add, outcomes: Record<string, number>): void {
  const { runId, status, types, events, meta } = r;
  const startedCount = types.filter((t) => t === 'run_started').length;
  const finishedCount = types.filter((t) => t === 'run_finished').length;
  if (startedCount !== 1) add('run_started', runId, `${startedCount} run_started events`);
  if (finishedCount !== 1) add('run_finished', runId, `${finishedCount} run_finished events`);
  if (FINAL_STATUSES.includes(status) && status !== 'succeeded') {
    const finished = events.find((_, i) => types[i] === 'run_finished')?.[1];
    const e = finished ? finished.indexOf('e') : -1;
    const outcome = (
      parseJson(e >= 0 ? finished?.[e + 1] : undefined) as
        { outcome?: { reason?: string; report?: string } } | undefined
    )?.outcome;
    const key = `${status} (${outcome?.reason ?? meta.reason ?? '?'}): ${(outcome?.report ?? '').slice(0, 160)}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
}

/** The stored history is a valid conversation. */
function checkHistory({ runId, messages, status, meta }: RunRecord, add: Add): void {
  if (messages.some((m) => !m || typeof m.role !== 'string'))
    add('invalid_history', runId, 'a stored message is not a JSON chat message');
  else if (messages.length === 0) add('invalid_history', runId, 'no stored messages');
  else {
    // How the run ended, for histories cut short by a failure.
    const ended = status === 'succeeded' ? '' : ` (run ${status}${meta.reason ? `: ${meta.reason}` : ''})`;
    for (const p of historyProblems(messages)) add('invalid_history', runId, `${p}${ended}`);
  }
}

/**
 * The model saw one result per call, and the record keeps it: the stored tool message and the results
 * hash are what the model was sent.
 */
function checkResults(r: RunRecord, seen: Map<string, string[]>, add: Add): void {
  const { runId, messages, recorded } = r;
  for (const [callId, contents] of seen) {
    if (contents.length > 1)
      add('two_results', runId, `call ${callId} reached the model with ${contents.length} different results`);
  }
  const storedTool = new Map<string, unknown>();
  for (const m of messages)
    if (m?.role === 'tool' && m.tool_call_id) storedTool.set(m.tool_call_id, parseJson(m.content));
  for (const [callId, contents] of seen) {
    if (contents.length !== 1) continue;
    const modelSaw = parseJson(contents[0]);
    if (storedTool.has(callId) && !isDeepStrictEqual(storedTool.get(callId), modelSaw))
      add(
        'record_differs',
        runId,
        `the stored tool message of ${callId} (${outline(storedTool.get(callId))}) is not what the model saw (${outline(modelSaw)})`,
      );
    // A call may have no entry (answered by the scheduler itself, or a finished run's call whose tool
    // message holds its result: the run's end drops that entry, and a duplicate execution ending later
    // may record one again), but an entry must be what was sent, apart from the executor id and the
    // tries the record keeps for the run's readers (the model is shown neither: `toolMessageContent`).
    // An entry dropped that way can no longer show a call answered "not run" that ran all the same:
    // `checkNotRun` tells that from the starts.
    const inHash = r.meta.final === '1' && storedTool.has(callId) ? undefined : recorded[callId];
    if (inHash !== undefined && !isDeepStrictEqual(asShownToModel(parseJson(inHash)), modelSaw))
      add(
        'record_differs',
        runId,
        `the results hash entry of ${callId} (${outline(parseJson(inHash))}) is not what the model saw (${outline(modelSaw)})`,
      );
  }
}

/** Timeouts of calls that never started, wherever they are reported (with the first message seen). */
function checkTimeouts(
  r: RunRecord,
  seen: Map<string, string[]>,
  starts: ReadonlyMap<string, number>,
  add: Add,
): void {
  const timedOut = new Map<string, string>();
  const noteTimeout = (callId: string, content: unknown) => {
    if (errorKind(content) !== 'timeout' || timedOut.has(callId)) return;
    const message = (parseJson(content) as { error?: { message?: string } }).error?.message ?? '';
    timedOut.set(callId, message);
  };
  for (const [callId, contents] of seen) for (const c of contents) noteTimeout(callId, c);
  for (const m of r.messages)
    if (m?.role === 'tool' && m.tool_call_id) noteTimeout(m.tool_call_id, m.content);
  for (const [callId, json] of Object.entries(r.recorded)) noteTimeout(callId, json);
  for (const [callId, message] of timedOut) {
    if (!starts.get(`${r.runId}/${callId}`))
      add(
        'timeout_never_started',
        r.runId,
        `call ${callId} was reported as timeout ("${message.slice(0, 120)}") but never started`,
      );
  }
}

/**
 * Calls the model was told did not run (`unavailable` and retryable: nobody started them, so they may be
 * called again) that an execution started all the same. Such a call's record ends up holding the result
 * of an execution the model was told never happened; a finished run's end drops the results-hash entry
 * that would show it (see `checkResults`), so the starts are what tells.
 */
function checkNotRun(
  r: RunRecord,
  seen: Map<string, string[]>,
  starts: ReadonlyMap<string, number>,
  add: Add,
): void {
  for (const [callId, contents] of seen) {
    const started = starts.get(`${r.runId}/${callId}`) ?? 0;
    if (started === 0) continue;
    const notRun = contents
      .map((c) => parseJson(c) as { error?: { kind?: string; message?: string; retryable?: boolean } })
      .find((c) => c?.error?.kind === 'unavailable' && c.error.retryable === true);
    if (notRun)
      add(
        'unavailable_ran',
        r.runId,
        `call ${callId} reached the model as unavailable ("${(notRun.error?.message ?? '').slice(0, 120)}") but started ${started} time(s)`,
      );
  }
}

/** Violations per invariant (only those with any). */
export function countViolations(violations: readonly Violation[]): Partial<Record<Invariant, number>> {
  const counts: Partial<Record<Invariant, number>> = {};
  for (const v of violations) counts[v.invariant] = (counts[v.invariant] ?? 0) + 1;
  return counts;
}

/** Runs with at least one violation, per invariant. */
export function countViolatingRuns(violations: readonly Violation[]): Partial<Record<Invariant, number>> {
  const sets = new Map<Invariant, Set<string>>();
  for (const v of violations) {
    const s = sets.get(v.invariant) ?? new Set<string>();
    s.add(v.subject);
    sets.set(v.invariant, s);
  }
  return Object.fromEntries([...sets].map(([k, s]) => [k, s.size]));
}

/** A recorded result without its `executor_id`: what the model is shown of it. */
function asShownToModel(result: unknown): unknown {
  if (typeof result !== 'object' || result === null) return result;
  const {
    executor_id: _executorId,
    attempts: _attempts,
    attempt_log: _attemptLog,
    ...shown
  } = result as Record<string, unknown>;
  return shown;
}

/** What became of the calls of the runs: those the scheduler answered `timeout` itself, and those that left no effect. */
export interface CallOutcomes {
  /** Calls the runs' histories made. */
  calls: number;
  /** `<runId>/<toolCallId>` of calls recorded as `timeout` with 0 attempts: no execution of them ever ended. */
  timeoutsWithoutAttempt: string[];
  /** `<runId>/<toolCallId>` of calls of succeeded runs whose effect file is missing: the tool never finished. */
  withoutEffect: string[];
  /** The calls of `withoutEffect` counted by `<tool> <recorded answer>` (`ok` or the error kind). */
  withoutEffectByAnswer: Record<string, number>;
  /** Tool name of each call of `withoutEffect`, by `<runId>/<toolCallId>`. */
  toolOf: Record<string, string>;
}

/** Reads every run's history and results and checks each call's effect file (see `effectFile`). */
export async function checkCallOutcomes(input: {
  redis: RedisClient;
  keys: Keys;
  runIds: readonly string[];
  effectsDir: string;
}): Promise<CallOutcomes> {
  const { redis, keys, runIds, effectsDir } = input;
  const out: CallOutcomes = {
    calls: 0,
    timeoutsWithoutAttempt: [],
    withoutEffect: [],
    withoutEffectByAnswer: {},
    toolOf: {},
  };
  for (const runId of runIds) {
    const [status, stored, hash, stateJson] = await Promise.all([
      redis.hget(keys.runMeta(runId), 'status'),
      redis.lrange(keys.runMessages(runId), 0, -1),
      redis.hgetall(keys.results(runId)),
      redis.get(keys.runState(runId)),
    ]);
    const messages = resolveToolMessageRefs(stored, hash).map((s) => parseJson(s) as Message | undefined);
    // A finished run's record keeps an answered call's result in its tool message (the tries in its step),
    // no longer in the results hash: the hash holds the others.
    const recorded: Record<string, string> = { ...hash };
    for (const m of messages)
      if (m?.role === 'tool' && m.tool_call_id && typeof m.content === 'string')
        recorded[m.tool_call_id] ??= m.content;
    const attempts = new Map<string, number>();
    const steps = foldedState(stateJson)?.steps;
    for (const step of Array.isArray(steps)
      ? (steps as Array<{ tool_call_id?: string; attempts?: number }>)
      : [])
      if (step.tool_call_id && typeof step.attempts === 'number')
        attempts.set(step.tool_call_id, step.attempts);
    for (const [callId, json] of Object.entries(recorded)) {
      const r = parseJson(json) as { error?: { kind?: string }; attempts?: number } | undefined;
      if (r?.error?.kind === 'timeout' && (r.attempts ?? attempts.get(callId)) === 0)
        out.timeoutsWithoutAttempt.push(`${runId}/${callId}`);
    }
    for (const m of messages) {
      for (const call of m?.role === 'assistant' ? (m.tool_calls ?? []) : []) {
        out.calls += 1;
        if (status === 'succeeded' && !existsSync(effectFile(effectsDir, runId, call.id))) {
          const id = `${runId}/${call.id}`;
          const tool = call.function?.name ?? '?';
          const r = parseJson(recorded[call.id] ?? 'null') as {
            ok?: boolean;
            error?: { kind?: string };
          } | null;
          const answer = `${tool} ${r === null ? 'unrecorded' : r.ok === false ? (r.error?.kind ?? 'error') : 'ok'}`;
          out.withoutEffect.push(id);
          out.toolOf[id] = tool;
          out.withoutEffectByAnswer[answer] = (out.withoutEffectByAnswer[answer] ?? 0) + 1;
        }
      }
    }
  }
  return out;
}
