/** The fields of a piece of live text, or of a stored event, that place it in a run's order. */
export interface Placed {
  type: string;
  /** The model turn it belongs to (live text), or that it records (`llm_request`, `llm_error`). */
  turn?: unknown;
}

/** The model turn a stored event records (`llm_request`, `llm_error`), if it records one. */
export const turnRecorded = (event: Placed): number | undefined =>
  (event.type === 'llm_request' || event.type === 'llm_error') && typeof event.turn === 'number'
    ? event.turn
    : undefined;

/**
 * Places a run's live text (answer deltas, never stored) among its stored events as a follower is sent
 * them: the text of model turn `n` goes after the record of turn `n - 1` and before the record of turn `n`
 * (its `llm_request`, which holds the whole answer). Text that comes early is held until then; text that
 * comes after its turn's record was sent is dropped, since the record carries it. (That the events stored
 * before a turn's text was published go first is the follower's part: it reads the stored events after
 * the text came, then sends the text.)
 *
 * A follower hands each piece of text to `arrived` as it comes, and lets it in with `caughtUp` once it
 * has read the stored events after it came (text of turn `n` at the latest when it is about to send the
 * record of turn `n`, having synced the live connection, so that no text published before the record is
 * still on its way). It sends each stored event after the text `before(event)` gives, notes it with
 * `recorded(event)`, and after a batch of stored events sends what `ready()` gives.
 *
 * A follower that resumed after a stored event (`Last-Event-ID`) has not seen the turns before it:
 * `resumed` lets text go until a turn's record shows where the run is.
 */
export class LiveOrder<D extends Placed> {
  /** The last turn whose record (answer or failure) was sent; undefined until one is, when resumed. */
  private recordedTurn: number | undefined;
  private inbox: D[] = [];
  private held: D[] = [];

  constructor(resumed = false) {
    this.recordedTurn = resumed ? undefined : 0;
  }

  /** Takes one piece of live text, in the order it came; it waits for `caughtUp`. */
  arrived(delta: D): void {
    this.inbox.push(delta);
  }

  /**
   * The stored events recorded before the text that came so far (of turns up to `upTo`) are being sent:
   * that text may go among them.
   */
  caughtUp(upTo = Infinity): void {
    const later: D[] = [];
    for (const d of this.inbox) {
      if (typeof d.turn === 'number' && d.turn > upTo) later.push(d);
      else this.held.push(d);
    }
    this.inbox = later;
  }

  /** The turn of the first text no read has caught up with (undefined: none, or not numbered). */
  get nextTurn(): unknown {
    return this.inbox[0]?.turn;
  }

  /** Whether text has come that no read has caught up with. */
  get waiting(): boolean {
    return this.inbox.length > 0;
  }

  /** The held text to send before stored event `event`: its turn's text, before the turn's record. */
  before(event: Placed): D[] {
    const turn = turnRecorded(event);
    return turn === undefined ? [] : this.release(turn);
  }

  /** Notes a stored event just sent. */
  recorded(event: Placed): void {
    const turn = turnRecorded(event);
    if (turn !== undefined) this.recordedTurn = Math.max(this.recordedTurn ?? 0, turn);
  }

  /** The live text that may be sent now, in order (after a batch of stored events). */
  ready(): D[] {
    return this.release(Infinity);
  }

  /** The last turn whose record was sent (undefined for a resumed follower that has seen none). */
  get lastRecordedTurn(): number | undefined {
    return this.recordedTurn;
  }

  /** Held text of turns up to `upTo` that may go now, in order; text of recorded turns is dropped. */
  private release(upTo: number): D[] {
    const ready: D[] = [];
    const kept: D[] = [];
    for (const d of this.held) {
      const turn = typeof d.turn === 'number' ? d.turn : undefined;
      if (turn !== undefined && this.recordedTurn !== undefined && turn <= this.recordedTurn) continue;
      // Later text never overtakes earlier text that must wait.
      if (kept.length === 0 && (turn ?? 0) <= upTo && this.mayGo(turn)) ready.push(d);
      else kept.push(d);
    }
    this.held = kept;
    return ready;
  }

  private mayGo(turn: number | undefined): boolean {
    if (this.recordedTurn === undefined || turn === undefined) return true;
    return turn === this.recordedTurn + 1;
  }
}

/** Whether Redis stream id `a` ("ms-seq") comes after `b`. */
export function streamIdAfter(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}
