/**
 * Pids of processes a test started that must not outlive it: should the test process exit before it
 * stopped them (a crash, a timeout, Ctrl-C), they are killed synchronously on its way out.
 */
const pids = new Set<number>();
let hooked = false;

export function killOnExit(pid: number | undefined): void {
  if (pid === undefined) return;
  pids.add(pid);
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/** The process has exited (or was stopped by the test): nothing to kill any more. */
export function forget(pid: number | undefined): void {
  if (pid !== undefined) pids.delete(pid);
}
