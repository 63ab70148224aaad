import { errorResult, type ToolResult } from '@agent-reach/protocol';
import type { AgentSpec } from '@agent-reach/shared';
import type { ChildRuns } from '../agent-loop/agent-tools.js';
import type { RunState } from '../agent-loop/run-state.js';

/**
 * Agent-tool calls in a replay: each is answered with the answer its child run gave the original run, and
 * no child run is started (a replay runs nothing new of its own accord); a call the recording has no
 * answer for is answered `unavailable`, as any unrecorded call of a replay is.
 */
export function recordedChildren(
  original: RunState,
  recorded: ReadonlyMap<string, ToolResult>,
  agent: (name: string) => AgentSpec | undefined,
  onAnswer: (toolCallId: string, tool: string, source: 'recorded' | 'not_recorded') => void,
): ChildRuns {
  const names = new Map(
    original.messages.flatMap((m) =>
      m.role === 'assistant'
        ? (m.tool_calls ?? []).flatMap((c) =>
            c.type === 'function' ? [[c.id, c.function.name] as const] : [],
          )
        : [],
    ),
  );
  return {
    agent,
    start: () => Promise.reject(new Error('a replay starts no child run')),
    answers: (_runId, callIds) =>
      Promise.resolve(
        callIds.map((id) => {
          const tool = names.get(id) ?? 'agent_tool';
          const answer = recorded.get(id);
          onAnswer(id, tool, answer ? 'recorded' : 'not_recorded');
          return answer
            ? { ...answer, tool_call_id: id }
            : errorResult(
                { toolCallId: id, name: tool },
                {
                  kind: 'unavailable',
                  message: 'not run: the recording has no answer of a child run for this call',
                  retryable: false,
                },
              );
        }),
      ),
    cancel: () => Promise.resolve(),
  };
}
