import type { ToolErrorInfo } from './errors.js';

/** What a person decided on one call of a tool that requires confirmation. */
export type ApprovalDecision = 'approved' | 'rejected';

/** A decision as stored in the run's approvals hash (`keys.runApprovals`), one JSON value per tool call id. */
export interface RecordedDecision {
  decision: ApprovalDecision;
  by?: string;
  reason?: string;
  decidedAt?: number;
  /**
   * The request asked a person to grant the call's tool to the run (a `requires_grant` tool of an agent
   * with `grant_by_approval`): approved, the executor accepts this call as granted.
   */
  grant?: true;
}

/**
 * A stored decision read back, with only the fields of the right type; undefined when the value is not
 * JSON or holds no decision. Both sides read decisions through this: the scheduler when it resumes a
 * parked run, the executor before it runs a call that requires confirmation.
 */
export function readDecision(json: string): RecordedDecision | undefined {
  let d: Partial<Record<keyof RecordedDecision, unknown>> | null;
  try {
    d = JSON.parse(json) as typeof d;
  } catch {
    return undefined;
  }
  if (typeof d !== 'object' || d === null) return undefined;
  if (d.decision !== 'approved' && d.decision !== 'rejected') return undefined;
  return {
    decision: d.decision,
    ...(typeof d.by === 'string' ? { by: d.by } : {}),
    ...(typeof d.reason === 'string' ? { reason: d.reason } : {}),
    ...(typeof d.decidedAt === 'number' ? { decidedAt: d.decidedAt } : {}),
    ...(d.grant === true ? { grant: true as const } : {}),
  };
}

/** The error of a call to a tool that requires confirmation and reached an executor without an approval. */
export function unconfirmedError(tool: string): ToolErrorInfo {
  return {
    kind: 'awaiting_confirmation',
    message: `"${tool}" runs only after a person approves the call`,
    retryable: false,
  };
}

/** The error a call refused by a person answers with: the model is told not to try it again. */
export function rejectedError(
  decision: Pick<RecordedDecision, 'by' | 'reason' | 'grant'>,
  tool?: string,
): ToolErrorInfo {
  if (decision.grant && tool !== undefined) return grantRejectedError(decision, tool);
  return {
    kind: 'forbidden',
    message: `refused by a person${decision.reason ? `: ${decision.reason}` : ''}; do not retry this call`,
    ...(decision.by ? { decided_by: decision.by } : {}),
    ...(decision.reason ? { reason: decision.reason } : {}),
    retryable: false,
  };
}

/**
 * A person refused to grant `tool` to the run: the call did not run, no call of the tool will in this run,
 * and the model is told what it can still do.
 */
function grantRejectedError(decision: Pick<RecordedDecision, 'by' | 'reason'>, tool: string): ToolErrorInfo {
  return {
    kind: 'forbidden',
    message:
      `a person refused to grant "${tool}" to this run${decision.reason ? `: ${decision.reason}` : ''}; the ` +
      `call was not run and "${tool}" will not run in this run: answer without it, or tell the user it ` +
      'needs their grant',
    ...(decision.by ? { decided_by: decision.by } : {}),
    ...(decision.reason ? { reason: decision.reason } : {}),
    retryable: false,
  };
}
