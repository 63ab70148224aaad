import { describe, expect, it } from 'vitest';
import { LiveOrder, streamIdAfter } from './live-order.js';

const text = (turn: number, content: string) => ({ type: 'answer_delta', turn, content });
const record = (turn: number) => ({ type: 'llm_request', turn });
const contents = (ds: Array<{ content: string }>) => ds.map((d) => d.content);

describe('LiveOrder', () => {
  it('holds text that no read has caught up with, then lets it go after the batch the read returned', () => {
    const order = new LiveOrder<ReturnType<typeof text>>();
    order.arrived(text(1, 'a'));
    expect(order.ready()).toEqual([]);
    order.caughtUp();
    order.recorded({ type: 'run_started' });
    expect(contents(order.ready())).toEqual(['a']);
  });

  it("holds a turn's text until the record of the turn before was sent, and sends it before its own record", () => {
    const order = new LiveOrder<ReturnType<typeof text>>();
    order.arrived(text(2, 'b'));
    order.caughtUp();
    expect(order.ready()).toEqual([]);
    expect(order.before(record(1))).toEqual([]);
    order.recorded(record(1));
    order.recorded({ type: 'tool_result' });
    // The batch goes on after the record of turn 1: its text waits for the batch's end or its own record.
    expect(contents(order.before(record(2)))).toEqual(['b']);
  });

  it('drops text of a turn whose record was sent before it came, since the record holds it', () => {
    const order = new LiveOrder<ReturnType<typeof text>>();
    order.recorded(record(1));
    order.arrived(text(1, 'late'));
    order.arrived(text(2, 'next'));
    order.caughtUp();
    expect(contents(order.ready())).toEqual(['next']);
  });

  it('catches up only the text of turns up to the one whose record is about to be sent', () => {
    const order = new LiveOrder<ReturnType<typeof text>>();
    order.recorded(record(1));
    order.arrived(text(2, 'two'));
    order.arrived(text(3, 'three'));
    order.caughtUp(2);
    expect(contents(order.before(record(2)))).toEqual(['two']);
    order.recorded(record(2));
    expect(order.ready()).toEqual([]);
    expect(order.waiting).toBe(true);
  });

  it('lets text go at once for a follower that resumed after a stored event and has seen no turn', () => {
    const order = new LiveOrder<ReturnType<typeof text>>(true);
    order.arrived(text(4, 'd'));
    order.caughtUp();
    expect(contents(order.ready())).toEqual(['d']);
  });

  it('compares Redis stream ids by time, then sequence', () => {
    expect(streamIdAfter('10-0', '9-5')).toBe(true);
    expect(streamIdAfter('10-2', '10-10')).toBe(false);
    expect(streamIdAfter('10-10', '10-2')).toBe(true);
    expect(streamIdAfter('0-0', '0-0')).toBe(false);
  });
});
