import type { RunControl } from '@agent-reach/scheduler';
import { renderTimeline, type RunEvent } from '@agent-reach/scheduler';
import { inlineStrings } from './terminal.js';

/** Prints a run's events as they are recorded until it finishes; returns its final event. */
export async function followRun(
  control: RunControl,
  runId: string,
  print: (line: string) => void,
  pollMs = 200,
) {
  let after: string | undefined;
  let start: number | undefined;
  for (;;) {
    const events = await control.events(runId, after);
    if (events.length > 0) {
      start ??= events[0]?.event.at;
      // Escaped per event, so that text inside one can neither start a line nor drive the terminal.
      const text = renderTimeline(inlineStrings(events)).split('\n');
      // renderTimeline measures from its first event: re-base on the run's start.
      events.forEach((e, i) => {
        const line = text[i]?.replace(
          /^\+\s*\d+ ms/,
          `+${String(e.event.at - (start ?? e.event.at)).padStart(6)} ms`,
        );
        if (line) print(line);
      });
      after = events.at(-1)?.id;
      const last = events.at(-1)?.event as RunEvent | undefined;
      if (last?.type === 'run_finished') return last;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
