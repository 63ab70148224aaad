import type { Socket } from 'node:net';

/** What `coalesceWrites` needs of a connection's socket (a TCP or TLS socket). */
export type CoalescedSocket = Pick<Socket, 'write' | 'cork' | 'uncork'>;

/**
 * Makes the commands a process writes to one Redis connection in one go leave in one socket write. ioredis
 * writes each command with its own `socket.write`, one system call each; a tool call is a dozen commands on
 * a few connections, and under load those writes were the largest single cost of the process's CPU (more
 * than a fifth of it). The first write corks the socket and `process.nextTick` uncorks it, once the code
 * running now is done: Node runs the tick queue after each drain of the promise-callback queue, so the
 * commands issued by the promise callbacks that one batch of replies woke up are handed to the kernel at
 * once (`writev`), in order, and none waits for the event loop's next turn. Uncorking at `setImmediate`
 * instead batched more under load (Redis CPU per call 1.17× the bare job's, against 1.48×), but made a
 * call made alone 1.4–1.8× slower: every write waited for the loop's check phase. Unlike ioredis's
 * `enableAutoPipelining`, no pipeline object is built per batch (on BullMQ's connections each would copy its
 * scripts) and batches do not wait for each other's replies.
 *
 * Applied again to each new socket (ioredis makes one per connect). Ending the socket flushes what is
 * corked (Node's `end` uncorks); a destroyed socket drops it, as it would drop an unsent write.
 */
export function coalesceWrites(socket: CoalescedSocket): void {
  const write = socket.write;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function coalescedWrite(this: unknown, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return (write as (...a: Parameters<Socket['write']>) => boolean).apply(this, args);
  } as Socket['write'];
}
