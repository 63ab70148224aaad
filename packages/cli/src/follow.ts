import type { RunControl } from '@agent-reach/scheduler';
import { renderTimeline, type RunEvent } from '@agent-reach/scheduler';
import type { AnswerDeltaEvent } from '@agent-reach/protocol';
import { inlineStrings, multiline } from './terminal.js';

/** Prints the text of a run's streamed model turns as it arrives, between the timeline's lines. */
export class AnswerPrinter {
  private turn: number | undefined;
  private attempt = 0;
  private open = false;

  constructor(private readonly write: (text: string) => void) {}

  /** One `answer_delta` message of the run's deltas channel. */
  delta(json: string): void {
    let d: AnswerDeltaEvent;
    try {
      d = JSON.parse(json) as AnswerDeltaEvent;
    } catch {
      return;
    }
    if (typeof d.content !== 'string' || d.content === '') return;
    if (d.turn !== this.turn || d.attempt !== this.attempt) {
      this.end();
      this.write(d.attempt > 1 ? 'answer (streaming, asked again): ' : 'answer (streaming): ');
      this.turn = d.turn;
      this.attempt = d.attempt;
      this.open = true;
    }
    this.write(multiline(d.content));
  }

  /** Ends a streamed line before the timeline prints its next one. */
  end(): void {
    if (this.open) this.write('\n');
    this.open = false;
  }
}

/** Prints a run's events as they are recorded until it finishes; returns its final event. */
export async function followRun(
  control: RunControl,
  runId: string,
  print: (line: string) => void,
  pollMs = 200,
  answers?: AnswerPrinter,
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
        if (line) {
          answers?.end();
          print(line);
        }
      });
      after = events.at(-1)?.id;
      const last = events.at(-1)?.event as RunEvent | undefined;
      if (last?.type === 'run_finished') return last;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
