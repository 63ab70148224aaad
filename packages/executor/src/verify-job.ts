import { UnrecoverableError } from 'bullmq';
import {
  isFinalStatus,
  isValidRunId,
  RUN_STATUSES,
  type RunStatus,
  NAME_PATTERN,
  readDecision,
  UnsupportedVersionError,
  readToolCallJob,
  TOOL_CALL_ID_PATTERN,
  type Keys,
  type ToolCallJob,
} from '@agent-reach/protocol';
import {
  constants,
  matchesLedger,
  redisScripts,
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
  /** A person approved this call (looked up only for tools that require confirmation). */
  approved: boolean;
  /** Tools the run was granted (its request's and its session's grants), from the run's record. */
  grants: ReadonlySet<string>;
}

const MAX_NAME_CHARS = 256;

/**
 * Checks a job against its run's record before anything runs: the run exists and is not final, belongs to
 * the job's agent, its ledger holds this exact call, and a tool that requires confirmation has a person's
 * recorded decision (the job's own `approval` field is never trusted). Also reads the run's grants, which
 * `runTool` checks, with this call's tool added when a person approved the call's grant request. `replyTo` must be a dispatcher's
 * reply list. Throws `JobRefused` otherwise.
 */
export async function verifyJob(
  client: RedisClient,
  keys: Keys,
  data: unknown,
  registry: Pick<ToolRegistry, 'get'>,
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
  // One round trip for everything the job is checked against.
  const [status, agent, sessionId, ledger, decision, recorded, grants] = await redisScripts(client).verifyJob(
    [
      keys.runMeta(job.run_id),
      keys.runCalls(job.run_id),
      keys.runApprovals(job.run_id),
      keys.results(job.run_id),
    ],
    [job.tool_call_id],
  );
  if (typeof status !== 'string') throw new JobRefused('run_not_found', 'no such run');
  // Only a live run's calls run: a final status, or one this release does not know, refuses them.
  if (!RUN_STATUSES.includes(status as RunStatus) || isFinalStatus(status)) {
    throw new JobRefused('run_final', `the run is ${status}`);
  }
  if (agent !== job.agent) throw new JobRefused('wrong_agent', 'the run belongs to another agent');
  if (!matchesLedger(ledger, job)) throw new JobRefused('not_in_ledger', 'the run ledger has no such call');
  const verified: VerifiedJob = {
    job,
    approved: false,
    // Read in the same script as the rest of the record: a grant is checked against the run it belongs to.
    grants: new Set(typeof grants === 'string' && grants !== '' ? grants.split(',') : []),
    ...(typeof sessionId === 'string' && sessionId !== '' ? { sessionId } : {}),
    ...(typeof recorded === 'string' ? { recorded } : {}),
  };
  if (tool?.requiresConfirmation && typeof decision === 'string') {
    if (readDecision(decision)?.decision !== 'approved') {
      throw new JobRefused('not_approved', 'the recorded decision on this call is not an approval');
    }
    verified.approved = true;
  }
  if (tool?.requiresGrant && typeof decision === 'string') {
    // A person approved this call's request for a grant (only the decision route writes the approvals
    // hash, and only for a request the run made): the call runs as granted, before the run's next
    // checkpoint has written the grant to its record for later calls.
    const recorded = readDecision(decision);
    if (recorded?.decision === 'approved' && recorded.grant) {
      verified.grants = new Set([...verified.grants, tool.name]);
    }
  }
  return verified;
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
