import { median } from '../measure.js';
import { fmt, type PhaseFigures } from './figures.js';
import { roundRatio, target, type Target } from '../targets.js';

type Rounds = ReadonlyMap<string, readonly PhaseFigures[]>;

/**
 * What checkpoints add per step over the platform without them, round by round: delta checkpoints
 * (`checkpoints`) and the whole state at every checkpoint as before deltas (`wholeCheckpoints`).
 */
function addedPerStep(figures: Rounds, config: string, inFlight: number, pick: (f: PhaseFigures) => number) {
  const ckpt = figures.get(`${config}@${inFlight}`) ?? [];
  const plat = figures.get(`platform@${inFlight}`) ?? [];
  return ckpt.slice(0, plat.length).map((f, i) => pick(f) - pick(plat[i] as PhaseFigures));
}

/**
 * The targets for checkpoints, each a ratio of figures measured in the same rounds: runs/s with
 * checkpoints against without; Redis commands and bytes per step that checkpoints add, against what the
 * whole-state format adds (printed beside); per-step overhead against the design-floor loop.
 */
export function checkpointTargets(figures: Rounds, levels: ReadonlyArray<{ inFlight: number }>): Target[] {
  const out: Target[] = [];
  const ratio = (a: string, b: string, pick: (f: PhaseFigures) => number) =>
    roundRatio(figures.get(a) ?? [], figures.get(b) ?? [], pick);
  for (const { inFlight } of levels) {
    out.push(
      target(
        `runs/s @${inFlight}, checkpoints/none`,
        ratio(`checkpoints@${inFlight}`, `platform@${inFlight}`, (f) => f.runsPerS),
        '>=',
        0.95,
      ),
    );
    const floorRunsPerS = ratio(
      `checkpointFloor@${inFlight}`,
      `platform@${inFlight}`,
      (f) => f.runsPerS,
    ).paired;
    if (Number.isFinite(floorRunsPerS))
      console.log(
        `  the checkpoint floor @${inFlight} (one fenced script per checkpoint, the step as one stream ` +
          `entry: checkpoint-floor.ts): runs/s ${floorRunsPerS.toFixed(2)}× without checkpoints`,
      );
    for (const [what, pick] of [
      ['redis commands/step', (f: PhaseFigures) => f.redisCommandsPerStep],
      ['redis bytes in/step', (f: PhaseFigures) => f.redisBytesInPerStep],
    ] as const) {
      const now = median(addedPerStep(figures, 'checkpoints', inFlight, pick));
      const before = median(addedPerStep(figures, 'wholeCheckpoints', inFlight, pick));
      const floor = median(addedPerStep(figures, 'checkpointFloor', inFlight, pick));
      console.log(
        `  checkpoints @${inFlight}: +${fmt(now, 1)} ${what} (the whole-state format, same run: +${fmt(before, 1)}; ` +
          `the checkpoint floor: +${fmt(floor, 1)}, ${fmt(floor / before, 2)}× the whole-state format)`,
      );
      out.push(target(`checkpoint ${what} @${inFlight}, delta/whole`, now / before, '<=', 0.33));
    }
    out.push(
      target(
        `overhead/step p50 @${inFlight}, platform/design floor`,
        ratio(`platform@${inFlight}`, `design@${inFlight}`, (f) => f.overheadMs.p50),
        '<=',
        1.1,
      ),
      target(
        `overhead/step p50 @${inFlight}, checkpoints/design floor`,
        ratio(`checkpoints@${inFlight}`, `design@${inFlight}`, (f) => f.overheadMs.p50),
        '<=',
        1.1,
      ),
    );
  }
  return out;
}
