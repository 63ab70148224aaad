import type { AgentReachClient, Run } from '@agent-reach/client';

/**
 * Waits for a run to end — or to park for a person's approval, which an eval has no one to give: the run
 * is then returned as it stands (`awaiting_approval`). The run's record decides; its event stream only
 * says when to look.
 */
export async function waitForEndOrApproval(
  client: AgentReachClient,
  runId: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Run> {
  const stop = new AbortController();
  const abort = () => stop.abort(signal?.reason);
  if (signal?.aborted) abort();
  signal?.addEventListener('abort', abort, { once: true });
  const parked = (async (): Promise<Run | undefined> => {
    try {
      for await (const e of client.streamEvents(runId, { signal: stop.signal })) {
        if (e.type === 'run_finished') return undefined;
        if (e.type !== 'approval_requested') continue;
        const run = await client.getRun(runId);
        if (run.status === 'awaiting_approval') return run;
      }
    } catch {
      // The stream is only a hint: waitForRun below follows the run whatever happens to it.
    }
    return undefined;
  })();
  const finished = client.waitForRun(runId, { timeoutMs, signal: stop.signal });
  try {
    const first = await Promise.race([finished, parked.then((run) => run ?? finished)]);
    return first;
  } finally {
    signal?.removeEventListener('abort', abort);
    stop.abort();
    finished.catch(() => undefined);
  }
}
