import { randomUUID } from 'node:crypto';
import type { Invariant } from './fault-check.js';
import type { Fleet } from './fleet.js';
import type { FaultScenario, ScenarioAttachment } from './scenarios.js';
import { poll, sleep } from './util.js';

/** The interval of the schedule of `schedule-scheduler-killed`, in ms (the shortest a schedule may have). */
export const FAULT_SCHEDULE_EVERY_MS = 1000;

/** How many times a request the API answers 503 (a loaded machine) is sent. */
const UNAVAILABLE_TRIES = 10;

/** Firings started before the scheduler is killed, and again after it is back. */
const FIRINGS_AROUND_THE_KILL = 3;

/** One firing as `GET /v1/schedules/:id` lists it. */
export interface RecordedFiring {
  scheduled_at: number;
  outcome: string;
  run_id?: string;
}

/** A run linked to the schedule (metadata `schedule_id`), with the slot it was started for. */
export interface LinkedRun {
  runId: string;
  /** Epoch ms of its metadata `scheduled_at`. */
  scheduledAt: number;
}

type Found = { invariant: Invariant; subject: string; detail: string };

/**
 * Each slot of an interval schedule fired exactly once over the window: every slot from the first to the
 * last has one run linked to it (none missing, none doubled), every firing recorded started its run, and
 * the runs linked to the schedule are the firings' runs.
 */
export function checkFirings(
  firings: readonly RecordedFiring[],
  runs: readonly LinkedRun[],
  everyMs: number,
): Found[] {
  const found: Found[] = [];
  const bySlot = new Map<number, string[]>();
  for (const r of runs) bySlot.set(r.scheduledAt, [...(bySlot.get(r.scheduledAt) ?? []), r.runId]);
  for (const [slot, ids] of bySlot)
    if (ids.length > 1)
      found.push({
        invariant: 'schedule_firing_doubled',
        subject: new Date(slot).toISOString(),
        detail: `${ids.length} runs: ${ids.join(', ')}`,
      });
  const slots = [...new Set([...bySlot.keys(), ...firings.map((f) => f.scheduled_at)])].sort((a, b) => a - b);
  // A firing's time is its slot, whole intervals from the first: a gap of two intervals or more is a
  // slot that never fired (BullMQ passes over the slots that fall due while a firing waits to be taken;
  // the scheduler that takes it late fires them).
  for (let i = 1; i < slots.length; i += 1) {
    const missing = Math.round((slots[i]! - slots[i - 1]!) / everyMs) - 1;
    for (let k = 1; k <= missing; k += 1)
      found.push({
        invariant: 'schedule_firing_lost',
        subject: new Date(slots[i - 1]! + k * everyMs).toISOString(),
        detail: 'no firing and no run in this slot',
      });
  }
  const linked = new Set(runs.map((r) => r.runId));
  for (const f of firings) {
    const subject = new Date(f.scheduled_at).toISOString();
    if (f.outcome !== 'started')
      found.push({ invariant: 'schedule_firing_lost', subject, detail: `recorded ${f.outcome}` });
    else if (!f.run_id || !linked.has(f.run_id))
      found.push({
        invariant: 'schedule_firing_lost',
        subject,
        detail: `its run ${f.run_id} is not linked to the schedule`,
      });
  }
  const recorded = new Set(firings.flatMap((f) => (f.run_id ? [f.run_id] : [])));
  for (const r of runs)
    if (!recorded.has(r.runId))
      found.push({
        invariant: 'schedule_firing_doubled',
        subject: new Date(r.scheduledAt).toISOString(),
        detail: `run ${r.runId} is linked to the schedule but no firing recorded it`,
      });
  return found;
}

/** The API of the fleet's schedulers, as the schedule's key. */
class ScheduleApi {
  constructor(
    private readonly fleet: Fleet,
    private readonly key: string,
  ) {}

  /** A scheduler's API (its URL from its ready message; the one not killed, for reads). */
  async call(method: string, path: string, body?: unknown, index = 1): Promise<Record<string, unknown>> {
    const url = String((await this.fleet.member('scheduler', index).child.ready).apiUrl);
    // A loaded machine may answer 503 (a Redis command past the API's timeout): asked again after
    // Retry-After, as a client would, so that the check reads every firing instead of stopping early.
    for (let tries = 1; ; tries += 1) {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      if (res.ok) return (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      if (res.status !== 503 || tries >= UNAVAILABLE_TRIES)
        throw new Error(`${method} ${path}: ${res.status} ${text}`);
      await sleep(Math.min(Number(res.headers.get('retry-after')) || 1, 5) * 1000);
    }
  }

  async firings(id: string): Promise<RecordedFiring[]> {
    return (await this.call('GET', `/v1/schedules/${id}`)).firings as RecordedFiring[];
  }

  async linkedRuns(id: string): Promise<LinkedRun[]> {
    const listed = (await this.call('GET', `/v1/runs?metadata=schedule_id=${id}&limit=200`)).runs as Array<{
      run_id: string;
    }>;
    return Promise.all(
      listed.map(async ({ run_id }) => {
        const run = await this.call('GET', `/v1/runs/${run_id}`);
        const metadata = (run.metadata ?? {}) as Record<string, string>;
        return { runId: run_id, scheduledAt: Date.parse(metadata.scheduled_at ?? '') };
      }),
    );
  }
}

/**
 * An interval schedule fires while the workload runs on the two schedulers (each serving the API and
 * firing schedules); scheduler 0 is killed (kill -9) once it has fired a few times and started again.
 */
export function scheduleSchedulerKilled(): FaultScenario {
  return {
    id: 'schedule-scheduler-killed',
    title: `an interval schedule fires every ${FAULT_SCHEDULE_EVERY_MS} ms while a scheduler is killed (kill -9) and started again`,
    async attach(): Promise<ScenarioAttachment> {
      const key = `faults-${randomUUID().replace(/-/g, '')}`;
      let api: ScheduleApi | undefined;
      let id = '';
      // Every firing seen while the schedule ran, by slot: the schedule keeps only its last ones.
      const seen = new Map<number, RecordedFiring>();
      const look = async () => {
        for (const f of await api!.firings(id)) seen.set(f.scheduled_at, f);
      };
      const started = () => [...seen.values()].filter((f) => f.outcome === 'started').length;
      const waitStarted = async (n: number, what: string) => {
        await poll(
          async () => {
            await look();
            return started() >= n;
          },
          90_000,
          what,
        );
      };
      return {
        env: { API_KEYS: `faults:${key}`, API_PORT: '0', API_HOST: '127.0.0.1' },
        async inject({ fleet, note }) {
          api = new ScheduleApi(fleet, key);
          const created = await api.call('POST', '/v1/schedules', {
            agent: 'fault_agent',
            input: 'scheduled {{scheduled_at}}',
            every_ms: FAULT_SCHEDULE_EVERY_MS,
            overlap: 'allow_all',
          });
          id = String(created.schedule_id);
          await waitStarted(FIRINGS_AROUND_THE_KILL, 'the first firings');
          const before = started();
          await fleet.kill9('scheduler', 0);
          await waitStarted(started() + FIRINGS_AROUND_THE_KILL, 'firings after the restart');
          await api.call('POST', `/v1/schedules/${id}/pause`);
          note('schedule firings before the kill', before);
        },
        async check({ note, violation }) {
          if (!api || !id) return;
          const t0 = Date.now();
          // A firing in flight at the pause is recorded a moment later; then the runs linked to the
          // schedule are its firings' runs, unless one was lost or doubled.
          let runs: LinkedRun[] = [];
          // A read that fails is a wait that goes on: ending early would take the firings not yet read
          // for lost ones.
          await poll(
            async () => {
              const read = await Promise.all([look(), api!.linkedRuns(id)]).catch(() => undefined);
              if (!read) return false;
              runs = read[1];
              const recorded = [...seen.values()].flatMap((f) => (f.run_id ? [f.run_id] : []));
              return runs.length === recorded.length && runs.every((r) => recorded.includes(r.runId));
            },
            30_000,
            '',
          ).catch(() => undefined);
          note('wait for the firings to settle ms', Date.now() - t0);
          note('schedule firings recorded', seen.size);
          note('runs linked to the schedule', runs.length);
          const slots = [...seen.keys()].sort((a, b) => a - b);
          note('schedule slots, ms after the first', slots.map((x) => x - slots[0]!).join(' '));
          for (const v of checkFirings([...seen.values()], runs, FAULT_SCHEDULE_EVERY_MS))
            violation(v.invariant, v.subject, v.detail);
        },
        close: async () => undefined,
      };
    },
    inject: (ctx) => ctx.attachment!.inject!(ctx),
  };
}
