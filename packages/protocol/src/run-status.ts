/** Every status a run can have, in the order a run goes through them. */
export const RUN_STATUSES = [
  'queued',
  'running',
  'awaiting_approval',
  'succeeded',
  'not_converged',
  'failed',
  'cancelled',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses a run ends with (its outcome's status); none of them changes again. */
export const FINAL_STATUSES = ['succeeded', 'not_converged', 'failed', 'cancelled'] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

const FINAL: ReadonlySet<string> = new Set(FINAL_STATUSES);

export function isFinalStatus(status: unknown): status is FinalStatus {
  return typeof status === 'string' && FINAL.has(status);
}
