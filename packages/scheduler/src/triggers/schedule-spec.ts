import { getNextMillis } from 'bullmq';
import { DEFAULT_SCHEDULE_CATCHUP_WINDOW_MS, MIN_SCHEDULE_INTERVAL_MS } from './constants.js';

/** What a schedule does when a firing comes while the run of an earlier one has not ended. */
export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'allow_all'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** A schedule as a caller asks for it. */
export interface ScheduleRequest {
  /** The agent each firing runs; exactly one of `agent` and `workflow`. */
  agent?: string;
  /** A workflow of the workflows file each firing starts, instead of an agent's run. */
  workflow?: string;
  /** The run's input; `{{scheduled_at}}` is replaced by the firing's time (ISO 8601, UTC). */
  input: string;
  /** A cron expression (5 or 6 fields), read in `timezone`. Exactly one of `cron` and `every_ms`. */
  cron?: string;
  /** IANA time zone of `cron`. Default UTC. */
  timezone?: string;
  /** An interval in ms, instead of `cron`. */
  every_ms?: number;
  metadata?: Record<string, string>;
  model?: string;
  /** Default `skip`. */
  overlap?: OverlapPolicy;
  /** A firing later than this after its time is skipped (counted as missed). Default 5 min. */
  catchup_window_ms?: number;
}

/** A schedule as it is stored: the request resolved, who owns it, whether it is paused. */
export interface Schedule extends Required<Pick<ScheduleRequest, 'input' | 'overlap'>> {
  id: string;
  agent?: string;
  workflow?: string;
  tenant: string;
  /** Id (hash prefix, not the secret) and name of the API key that created it; its runs start as that key. */
  key_id: string;
  key_name: string;
  cron?: string;
  timezone?: string;
  every_ms?: number;
  metadata?: Record<string, string>;
  model?: string;
  catchup_window_ms: number;
  paused: boolean;
  created_at: number;
}

/** What became of one firing. */
export interface ScheduleFiring {
  scheduled_at: number;
  fired_at: number;
  outcome: 'started' | 'skipped_overlap' | 'skipped_late' | 'failed';
  run_id?: string;
  /** For a workflow schedule: the workflow the firing started. */
  workflow_id?: string;
  error?: string;
}

/** A schedule request refused: `path` names the field, `problem` says why. */
export class ScheduleInvalid extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path} ${problem}`);
    this.name = 'ScheduleInvalid';
  }
}

/** True when `zone` is an IANA time zone this runtime knows. */
function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks what a schedule's timing asks for (a `ScheduleInvalid` naming the field otherwise): exactly one
 * of `cron` and `every_ms`, a cron expression BullMQ's parser reads and that fires again, a known time zone,
 * an interval of at least {@link MIN_SCHEDULE_INTERVAL_MS}.
 */
export function checkScheduleTiming(req: Pick<ScheduleRequest, 'cron' | 'timezone' | 'every_ms'>): void {
  if ((req.cron === undefined) === (req.every_ms === undefined))
    throw new ScheduleInvalid('/cron', 'or /every_ms is required, and not both');
  if (req.every_ms !== undefined) {
    if (!Number.isInteger(req.every_ms) || req.every_ms < MIN_SCHEDULE_INTERVAL_MS)
      throw new ScheduleInvalid('/every_ms', `must be an integer of at least ${MIN_SCHEDULE_INTERVAL_MS}`);
    if (req.timezone !== undefined) throw new ScheduleInvalid('/timezone', 'applies to cron only');
    return;
  }
  const tz = req.timezone ?? 'UTC';
  if (!knownTimeZone(tz)) throw new ScheduleInvalid('/timezone', `"${tz}" is not a known IANA time zone`);
  let next: number | undefined;
  try {
    next = getNextMillis(Date.now(), { pattern: req.cron, tz });
  } catch (err) {
    throw new ScheduleInvalid(
      '/cron',
      `"${req.cron}" is not a valid cron expression: ${(err as Error).message}`,
    );
  }
  if (next === undefined || !Number.isFinite(next))
    throw new ScheduleInvalid('/cron', `"${req.cron}" never fires`);
}

/** The next time a schedule fires after `afterMs`, or undefined when it is paused. */
export function nextFiring(s: Schedule, afterMs: number): number | undefined {
  if (s.paused) return undefined;
  if (s.every_ms !== undefined) return getNextMillis(afterMs, { every: s.every_ms });
  return getNextMillis(afterMs, { pattern: s.cron, tz: s.timezone ?? 'UTC' });
}

/**
 * The slots of a schedule strictly between `after` (itself a slot) and `before`, not earlier than
 * `notBefore`, oldest first: an interval's are `after` plus whole intervals (BullMQ keeps an interval's
 * offset), a cron's as its expression reads.
 */
export function slotsBetween(s: Schedule, after: number, before: number, notBefore = after): number[] {
  const slots: number[] = [];
  let at = after;
  if (notBefore > after)
    at =
      s.every_ms !== undefined
        ? after + Math.floor((notBefore - after) / s.every_ms) * s.every_ms
        : notBefore - 1;
  for (;;) {
    const next =
      s.every_ms !== undefined
        ? at + s.every_ms
        : getNextMillis(at, { pattern: s.cron, tz: s.timezone ?? 'UTC' });
    if (next === undefined || !Number.isFinite(next) || next <= at || next >= before) return slots;
    if (next >= notBefore) slots.push(next);
    at = next;
  }
}

/** The schedule a checked request makes, owned by the key and tenant given. */
export function scheduleOf(
  id: string,
  req: ScheduleRequest,
  owner: { tenant: string; keyId: string; keyName: string },
  now: number,
): Schedule {
  checkScheduleTiming(req);
  if ((req.agent === undefined) === (req.workflow === undefined))
    throw new ScheduleInvalid('/agent', 'or /workflow is required, and not both');
  if (req.overlap !== undefined && !OVERLAP_POLICIES.includes(req.overlap))
    throw new ScheduleInvalid('/overlap', `must be one of ${OVERLAP_POLICIES.join(', ')}`);
  return {
    id,
    tenant: owner.tenant,
    key_id: owner.keyId,
    key_name: owner.keyName,
    ...(req.agent !== undefined ? { agent: req.agent } : {}),
    ...(req.workflow !== undefined ? { workflow: req.workflow } : {}),
    input: req.input,
    ...(req.cron !== undefined ? { cron: req.cron, timezone: req.timezone ?? 'UTC' } : {}),
    ...(req.every_ms !== undefined ? { every_ms: req.every_ms } : {}),
    ...(req.metadata ? { metadata: req.metadata } : {}),
    ...(req.model !== undefined ? { model: req.model } : {}),
    overlap: req.overlap ?? 'skip',
    catchup_window_ms: req.catchup_window_ms ?? DEFAULT_SCHEDULE_CATCHUP_WINDOW_MS,
    paused: false,
    created_at: now,
  };
}
