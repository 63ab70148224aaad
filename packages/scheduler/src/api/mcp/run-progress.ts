import type { RunEvent } from '@agent-reach/protocol';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * What a run's events tell an MCP client waiting on it: one progress message per step, each prefixed
 * with the run's id (so a client that stops waiting can still find the run). A run records its events
 * at its checkpoints, and the dispatch of a turn's calls with their results; the model turn is recorded
 * before its calls are dispatched, so a tool call is reported started from the model turn that asked
 * for it (and from the dispatch only when no turn named it, as on a resumed run).
 */
export function createRunProgress(runId: string): (event: RunEvent) => string[] {
  const started = new Set<string>();
  const start = (calls: ReadonlyArray<{ id: string; tool: string }>) =>
    calls
      .filter((c) => !started.has(c.id))
      .map((c) => (started.add(c.id), `tool ${c.tool} started (${c.id})`));
  return (event) => {
    const steps = describe(event);
    if (event.type === 'llm_request')
      steps.push(...start((event.message.tool_calls ?? []).map((c) => ({ id: c.id, tool: c.name }))));
    if (event.type === 'tool_dispatched')
      steps.push(...start(event.calls.map((c) => ({ id: c.tool_call_id, tool: c.tool }))));
    return steps.map((s) => `${runId}: ${s}`);
  };
}

function describe(e: RunEvent): string[] {
  switch (e.type) {
    case 'run_started':
      return [`started (agent ${e.agent})`];
    case 'plan':
      return [`planned ${plural(e.steps.length, 'step')}`];
    case 'llm_request':
      return [
        e.tool_calls > 0
          ? `model turn ${e.turn}: ${plural(e.tool_calls, 'tool call')}`
          : `model turn ${e.turn}: answered`,
      ];
    case 'llm_error':
      return [`model turn ${e.turn} failed${e.status === undefined ? '' : ` (${e.status})`}`];
    case 'tool_result': {
      const how = `${e.kind ?? (e.ok ? 'ok' : 'error')}${e.error ? ` (${e.error.kind})` : ''}`;
      return [`tool ${e.tool} finished: ${how} (${e.tool_call_id})`];
    }
    case 'approval_requested':
      return [`tool ${e.tool} waits for approval (${e.tool_call_id})`];
    case 'approval_decided':
      return [`tool ${e.tool} ${e.decision}${e.by ? ` by ${e.by}` : ''} (${e.tool_call_id})`];
    case 'guard':
      return [`guard ${e.guard}: ${e.action}`];
    case 'compaction':
      return [`history compacted (${e.before_tokens} → ${e.after_tokens} tokens)`];
    case 'run_finished':
      return [`${e.outcome.status} (${e.outcome.reason})`];
    default:
      return [];
  }
}
