import { UnrecoverableError } from 'bullmq';
import {
  isFinalStatus,
  isValidRunId,
  RUN_STATUSES,
  NAME_PATTERN,
  UnsupportedVersionError,
  readToolCallJob,
  TOOL_CALL_ID_PATTERN,
  type Keys,
  type ToolCallJob,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  callLedgerEntry,
  constants,
  redisScripts,
  type AgentsFile,
  type ToolRegistry,
  type RedisClient,
} from '@agent-reach/shared';

/** Why a job was refused, as a metric label and a log field. */
export type RefusalReason =
  | 'malformed'
  | 'unsupported_version'
  | 'reply_to'
  | 'run_not_found'
  | 'run_final'
  | 'wrong_agent'
  | 'not_in_ledger'
  | 'not_approved';

/**
 * A job that does not match its run's record. It fails unrun (BullMQ never retries an
 * `UnrecoverableError`), and nothing is written to the run or pushed anywhere.
 */
export class JobRefused extends UnrecoverableError {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
  }
}

/** What the run's record says about a verified job. */
export interface VerifiedJob {
  job: ToolCallJob;
  /** The run's session, when it has one (the owner of any ref the call leaves). */
  sessionId?: string;
  /** The call's recorded result (JSON) when it already has one: it is handed back, never run again. */
  recorded?: string;
  /**
   * What became of the call's start: `started` (recorded on the run's record: run it now), `withdrawn`
   * (its dispatcher gave this publication up: do not run it), `recorded` (it has a result: see
   * `recorded`) or `checked` (no start was asked for: its deadline has passed).
   */
  start: 'started' | 'withdrawn' | 'recorded' | 'checked';
  /** A person approved this call (looked up only for tools that require confirmation). */
  approved: boolean;
  /**
   * The tool requires confirmation or a grant and no person's decision on this call is recorded yet: the
   * run may be waiting for one (see `awaitsPerson`).
   */
  undecided: boolean;
  /** Tools the run was granted (its request's and its session's grants), from the run's record. */
  grants: ReadonlySet<string>;
}

/**
 * How to record the call's start once the job passes its checks, before its deadline; without it nothing
 * is written.
 */
export interface StartCall {
  executorId: string;
}

const MAX_NAME_CHARS = 256;
const LIVE_STATUSES = RUN_STATUSES.filter((s) => !isFinalStatus(s));
const REFUSALS: ReadonlySet<string> = new Set<RefusalReason>([
  'run_not_found',
  'run_final',
  'wrong_agent',
  'not_in_ledger',
  'not_approved',
]);
const REFUSAL_MESSAGES: Readonly<Record<string, string>> = {
  run_not_found: 'no such run',
  wrong_agent: 'the run belongs to another agent',
  not_in_ledger: 'the run ledger has no such call',
  not_approved: 'the recorded decision on this call is not an approval',
};

/**
 * Checks a job against its run's record before anything runs: the run exists and is not final, belongs to
 * the job's agent, its ledger holds this exact call, and a tool that requires confirmation has a person's
 * recorded decision (the job's own `approval` field is never trusted). Also reads the run's grants, which
 * `runTool` checks, with this call's tool added when a person approved the call's grant request.
 * `replyTo` must be a dispatcher's reply list. Throws `JobRefused` otherwise. With
 * `start`, a job that passes before its deadline is recorded as started in the same script (one round
 * trip), unless the call has a result or its publication was withdrawn.
 */
export async function verifyJob(
  client: RedisClient,
  keys: Keys,
  data: unknown,
  registry: Pick<ToolRegistry, 'get'>,
  start?: StartCall,
): Promise<VerifiedJob> {
  const job = wellFormed(data);
  const tool = registry.get(job.name);
  const replies = keys.replies('');
  if (
    !job.reply_to.startsWith(replies) ||
    !constants.REPLY_ID_PATTERN.test(job.reply_to.slice(replies.length))
  ) {
    throw new JobRefused('reply_to', 'reply_to is not a dispatcher reply list');
  }
  // One round trip for every check and the start: the script refuses before it writes anything.
  const [verdict, detail, sessionId, grants, approved, granted, decided] = await redisScripts(
    client,
  ).verifyStart(
    [
      keys.runMeta(job.run_id),
      keys.runCalls(job.run_id),
      keys.runApprovals(job.run_id),
      keys.results(job.run_id),
    ],
    [
      job.tool_call_id,
      job.agent,
      callLedgerEntry(job),
      `${tool?.requiresConfirmation ? '1' : '0'}${tool?.requiresGrant ? '1' : '0'}`,
      start && Date.now() < job.deadline ? publicationOf(job) : '',
      start?.executorId ?? '',
      ...LIVE_STATUSES,
    ],
  );
  if (REFUSALS.has(verdict)) {
    const reason = verdict as RefusalReason;
    throw new JobRefused(reason, REFUSAL_MESSAGES[reason] ?? `the run is ${detail ?? 'unknown'}`);
  }
  if (verdict !== 'started' && verdict !== 'withdrawn' && verdict !== 'recorded' && verdict !== 'checked') {
    throw new Error(`verify-start answered ${verdict}`);
  }
  return {
    job,
    start: verdict,
    approved: approved === '1',
    undecided: (tool?.requiresConfirmation === true || tool?.requiresGrant === true) && decided !== '1',
    // Read in the same script as the rest of the record: a grant is checked against the run it belongs to.
    // A person approved this call's grant request (only the decision route writes the approvals hash, and
    // only for a request the run made): the call runs as granted before the run's next checkpoint has
    // written the grant to its record for later calls.
    grants: new Set([
      ...(typeof grants === 'string' && grants !== '' ? grants.split(',') : []),
      ...(granted === '1' && tool ? [tool.name] : []),
    ]),
    ...(typeof sessionId === 'string' && sessionId !== '' ? { sessionId } : {}),
    ...(verdict === 'recorded' && typeof detail === 'string' ? { recorded: detail } : {}),
  };
}

/**
 * Whether a call's outcome is a refusal (`forbidden`) of a call its run may be parked on, waiting for a
 * person's decision that is not recorded yet: then it is replied but never recorded as the call's result,
 * so that a forged job for the call cannot void the decision (once the person approves, the call is
 * published again and runs, or is refused then). The scheduler parks a call of a tool that requires
 * confirmation, and a call refused for a grant when the agent asks a person for grants
 * (`grant_by_approval`). A refusal after a decision, or of a call nobody is asked about, is its result.
 */
export function awaitsPerson(
  lookup: {
    registry: Pick<ToolRegistry, 'get'>;
    agents: Pick<AgentsFile, 'agents'>;
  },
  verified: VerifiedJob,
  result: Pick<ToolResult, 'error'>,
): boolean {
  const error = result.error;
  if (!verified.undecided || error?.kind !== 'forbidden') return false;
  const { job } = verified;
  if (lookup.registry.get(job.name)?.requiresConfirmation === true) return true;
  return error.reason === 'grant' && lookup.agents.agents.get(job.agent)?.grant_by_approval === true;
}

/** Which publication of its call a job is (the dispatcher's `enqueued_at`); 0 for jobs without one. */
function publicationOf(job: ToolCallJob): number {
  return typeof job.enqueued_at === 'number' && Number.isSafeInteger(job.enqueued_at) ? job.enqueued_at : 0;
}

/** The job's fields that key Redis or reach the handler, checked by type and pattern. */
function wellFormed(data: unknown): ToolCallJob {
  // A job of another release's format is refused by name, not read as if it were this one's; version 1
  // (camelCase) is read with today's names.
  let d: Partial<Record<keyof ToolCallJob, unknown>>;
  try {
    d = readToolCallJob(data);
  } catch (err) {
    if (err instanceof UnsupportedVersionError) throw new JobRefused('unsupported_version', err.message);
    throw err;
  }
  const ok =
    typeof d.run_id === 'string' &&
    isValidRunId(d.run_id) &&
    typeof d.tool_call_id === 'string' &&
    TOOL_CALL_ID_PATTERN.test(d.tool_call_id) &&
    typeof d.agent === 'string' &&
    NAME_PATTERN.test(d.agent) &&
    typeof d.name === 'string' &&
    d.name.length <= MAX_NAME_CHARS &&
    typeof d.arguments === 'string' &&
    typeof d.deadline === 'number' &&
    typeof d.reply_to === 'string' &&
    typeof d.trace_id === 'string';
  if (!ok) throw new JobRefused('malformed', 'the job data does not have the tool-call job shape');
  return d as ToolCallJob;
}
