import type { Socket } from 'node:net';

/** What `coalesceWrites` needs of a connection's socket (a TCP or TLS socket). */
export type CoalescedSocket = Pick<Socket, 'write' | 'cork' | 'uncork'>;

/**
 * Makes the commands a process writes to one Redis connection in one go leave in two socket writes at most:
 * the first at once, the rest together. ioredis writes each command with its own `socket.write`, one
 * system call each; a tool call is a dozen commands on a few connections, and under load those writes were
 * the largest single cost of the process's CPU (more than a fifth of it). The second write of a tick corks
 * the socket and `process.nextTick` uncorks it, once the code running now is done: Node runs the tick
 * queue after each drain of the promise-callback queue, so the commands issued by the promise callbacks
 * that one batch of replies woke up are handed to the kernel at once (`writev`), in order, and none waits
 * for the event loop's next turn. Uncorking at `setImmediate` instead batched more under load (Redis CPU
 * per call 1.17× the bare job's, against 1.48×), but made a call made alone 1.4–1.8× slower: every write
 * waited for the loop's check phase. Unlike ioredis's `enableAutoPipelining`, no pipeline object is built
 * per batch (on BullMQ's connections each would copy its scripts) and batches do not wait for each other's
 * replies.
 *
 * The first write is not held: a call made alone writes one command at a time, and corking it cost the
 * Writable's buffering and a flush for nothing (sequential p50 0.60–0.65 ms with every write corked, against
 * 0.57–0.59 with the first one sent at once, three runs each); under load a batch leaves in two writes
 * instead of one.
 *
 * Applied again to each new socket (ioredis makes one per connect). Ending the socket flushes what is
 * corked (Node's `end` uncorks); a destroyed socket drops it, as it would drop an unsent write.
 */
export function coalesceWrites(socket: CoalescedSocket): void {
  const write = socket.write;
  /** 0: nothing written in this tick yet; 1: one write went out at once; 2: the rest wait, corked. */
  let state = 0;
  const settle = () => {
    if (state === 2) socket.uncork();
    state = 0;
  };
  socket.write = function coalescedWrite(this: unknown, ...args: Parameters<Socket['write']>) {
    if (state === 0) {
      state = 1;
      process.nextTick(settle);
    } else if (state === 1) {
      state = 2;
      socket.cork();
    }
    return (write as (...a: Parameters<Socket['write']>) => boolean).apply(this, args);
  } as Socket['write'];
}
