import type { RunControl } from '@agent-reach/scheduler';
import { renderTimeline, type RunEvent } from '@agent-reach/scheduler';
import { LiveOrder, turnRecorded } from '@agent-reach/scheduler/internal';
import type { AnswerDeltaEvent } from '@agent-reach/protocol';
import { inlineStrings, multiline } from './terminal.js';

/**
 * Prints the text of a run's streamed model turns between the timeline's lines, in the run's order (see
 * `LiveOrder`): a turn's text after the lines of everything recorded before the turn began, and before
 * the turn's own line.
 */
export class AnswerPrinter {
  private turn: number | undefined;
  private attempt = 0;
  private open = false;
  private readonly order = new LiveOrder<AnswerDeltaEvent>();
  private wake: (() => void) | undefined;

  /**
   * @param write Where the text goes.
   * @param sync A round trip on the connection the text comes on: whatever was published before it
   *   has arrived when it resolves. Default: none.
   */
  constructor(
    private readonly write: (text: string) => void,
    private readonly sync: () => Promise<unknown> = async () => undefined,
  ) {}

  /** One `answer_delta` message of the run's deltas channel: kept until the follower has caught up. */
  delta(json: string): void {
    let d: AnswerDeltaEvent;
    try {
      d = JSON.parse(json) as AnswerDeltaEvent;
    } catch {
      return;
    }
    if (typeof d.content !== 'string' || d.content === '') return;
    this.order.arrived(d);
    this.wake?.();
  }

  /** The follower is about to read the stored events: the text that came so far goes among them. */
  reading(): void {
    this.order.caughtUp();
  }

  /** Prints the text that goes before the line of `event`. */
  async before(event: RunEvent): Promise<void> {
    const turn = turnRecorded(event);
    if (turn !== undefined) {
      // The turn's text was published before its record: what is still on its way goes before the line.
      await this.sync().catch(() => undefined);
      this.order.caughtUp(turn);
    }
    this.show(this.order.before(event));
  }

  /** Notes an event whose line was printed. */
  recorded(event: RunEvent): void {
    this.order.recorded(event);
  }

  /** Prints the held text that may go now (after the lines printed so far). */
  flush(): void {
    this.show(this.order.ready());
  }

  /** Resolves after `ms`, or sooner when text comes. */
  next(ms: number): Promise<void> {
    if (this.order.waiting) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /** Ends a streamed line before the timeline prints its next one. */
  end(): void {
    if (this.open) this.write('\n');
    this.open = false;
  }

  private show(deltas: AnswerDeltaEvent[]): void {
    for (const d of deltas) {
      if (d.turn !== this.turn || d.attempt !== this.attempt) {
        this.end();
        this.write(d.attempt > 1 ? 'answer (streaming, asked again): ' : 'answer (streaming): ');
        this.turn = d.turn;
        this.attempt = d.attempt;
        this.open = true;
      }
      this.write(multiline(d.content ?? ''));
    }
  }
}

/**
 * Prints a run's events as they are recorded until it finishes, and the text of its streamed turns in
 * their place among them; returns its final event.
 */
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
    // Text that came before this read goes after the events it returns: they were recorded first.
    answers?.reading();
    const events = await control.events(runId, after);
    if (events.length > 0) {
      start ??= events[0]?.event.at;
      // Escaped per event, so that text inside one can neither start a line nor drive the terminal.
      const text = renderTimeline(inlineStrings(events)).split('\n');
      // renderTimeline measures from its first event: re-base on the run's start.
      for (const [i, e] of events.entries()) {
        const line = text[i]?.replace(
          /^\+\s*\d+ ms/,
          `+${String(e.event.at - (start ?? e.event.at)).padStart(6)} ms`,
        );
        await answers?.before(e.event);
        if (line) {
          answers?.end();
          print(line);
        }
        answers?.recorded(e.event);
      }
      after = events.at(-1)?.id;
      const last = events.at(-1)?.event as RunEvent | undefined;
      if (last?.type === 'run_finished') return last;
    }
    answers?.flush();
    await (answers ? answers.next(pollMs) : new Promise((r) => setTimeout(r, pollMs)));
  }
}
