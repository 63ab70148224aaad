import { describe, expect, it } from 'vitest';
import { scheduleOf, slotsBetween, type ScheduleRequest } from '@agent-reach/scheduler/internal';

const owner = { tenant: 'default', keyId: 'k', keyName: 'test' };
const schedule = (req: Omit<ScheduleRequest, 'agent' | 'input'>) =>
  scheduleOf('sch_slots', { agent: 'test_agent', input: 'x', ...req }, owner, 0);

// The slots a late firing catches up: those BullMQ's job scheduler passed over between the late
// firing's slot and the next one it placed.
describe('the slots of a schedule between a firing and the next', () => {
  it("lists an interval's slots as whole intervals from the firing's slot, keeping its offset", () => {
    const s = schedule({ every_ms: 1_000 });
    expect(slotsBetween(s, 10_250, 13_250)).toEqual([11_250, 12_250]);
    expect(slotsBetween(s, 10_250, 11_250)).toEqual([]);
  });

  it('leaves out the slots before the catch-up bound, without walking each of them', () => {
    const s = schedule({ every_ms: 1_000 });
    expect(slotsBetween(s, 250, 1e12 + 3_250, 1e12)).toEqual([1e12 + 250, 1e12 + 1_250, 1e12 + 2_250]);
  });

  it("lists a cron expression's slots in its time zone", () => {
    const s = schedule({ cron: '0 * * * *', timezone: 'UTC' });
    const at = Date.UTC(2026, 0, 1, 8);
    expect(slotsBetween(s, at, at + 3 * 3_600_000)).toEqual([at + 3_600_000, at + 7_200_000]);
    expect(slotsBetween(s, at, at + 3 * 3_600_000, at + 5_400_000)).toEqual([at + 7_200_000]);
  });
});
