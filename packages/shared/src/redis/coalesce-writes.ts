import type { Socket } from 'node:net';

/** What `coalesceWrites` needs of a connection's socket (a TCP or TLS socket). */
export type CoalescedSocket = Pick<Socket, 'write' | 'cork' | 'uncork'>;

/**
 * Makes the commands a process writes to one Redis connection within one turn of the event loop leave in
 * one socket write. ioredis writes each command with its own `socket.write`, one system call each; a tool
 * call is a dozen commands on a few connections, and under load those writes were the largest single cost
 * of the process's CPU (more than a fifth of it). The first write of a turn corks the socket and the turn's
 * end (`setImmediate`, after the I/O callbacks of the turn have run) uncorks it: Node then hands the kernel
 * every buffered command at once (`writev`). Commands keep their order; a command written alone waits only
 * for the turn to end. Unlike ioredis's `enableAutoPipelining`, no pipeline object is built per batch (on
 * BullMQ's connections each would copy its scripts) and batches do not wait for each other's replies.
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
      setImmediate(uncork);
    }
    return (write as (...a: Parameters<Socket['write']>) => boolean).apply(this, args);
  } as Socket['write'];
}
