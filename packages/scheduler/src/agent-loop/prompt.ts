import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { AgentSpec, ToolCatalogEntry } from '@agent-reach/shared';
import type { ChatMessage, RunState } from './run-state.js';
import { providerName } from './model-answer.js';
import { renderTaskStack } from './task-stack.js';
import { contextAsSystem } from './context-providers.js';
import { storedContentForModel } from './tool-calls.js';

/** Marks the summary block so tests and people can find it; the JSON inside is what the model reads. */
export const SUMMARY_HEADING = '## Summary of earlier steps (compacted)';
export const TASK_STACK_HEADING = '## Task stack';

/**
 * The system prompt: role, reachable-tool guidance, the task stack, then the compacted summary — the task
 * stack always above the summary so the model reads what is left to do first.
 */
export function buildSystemPrompt(agent: AgentSpec, state: RunState, tools: ToolCatalogEntry[]): string {
  const parts = [
    `You are ${agent.name}${agent.description ? `: ${agent.description}` : ''}.`,
    ...(agent.instructions ? [agent.instructions] : []),
    tools.length > 0
      ? `You can call these tools: ${tools.map((t) => t.name).join(', ')}. Call only these, with arguments that ` +
        'match their schemas. Independent calls can go in one turn. A tool result with ok: false carries ' +
        'error.kind and, where it helps, did_you_mean, field, expected and example: correct the call and try ' +
        'again, or explain what failed. When the task is done, answer without calling a tool.'
      : 'No tools are available right now: answer from what you know and say what you could not do.',
    ...(agent.allowed_topic?.length ? [`Stay within these topics: ${agent.allowed_topic.join(', ')}.`] : []),
  ];
  if (state.plan.steps.length > 0) parts.push(`${TASK_STACK_HEADING}\n${renderTaskStack(state.plan.steps)}`);
  if (state.summary) parts.push(`${SUMMARY_HEADING}\n${JSON.stringify(state.summary)}`);
  return parts.join('\n\n');
}

/**
 * The request's messages: the system prompt, then the history with tool names the provider accepts and
 * every tool result as the model reads it.
 */
export function buildMessages(agent: AgentSpec, state: RunState, tools: ToolCatalogEntry[]): ChatMessage[] {
  return [
    { role: 'system', content: buildSystemPrompt(agent, state, tools) },
    ...contextAsSystem(state.messages).map(forProvider),
  ];
}

function forProvider(m: ChatMessage): ChatMessage {
  if (m.role === 'tool' && typeof m.content === 'string') {
    const content = storedContentForModel(m.content);
    return content === m.content ? m : { ...m, content };
  }
  if (m.role !== 'assistant' || !m.tool_calls) return m;
  const calls = m.tool_calls.map((c) =>
    c.type === 'function' && providerName(c.function.name) !== c.function.name
      ? { ...c, function: { ...c.function, name: providerName(c.function.name) } }
      : c,
  );
  return calls.every((c, i) => c === m.tool_calls?.[i]) ? m : { ...m, tool_calls: calls };
}

export function toolSpecs(tools: ToolCatalogEntry[]): ChatCompletionTool[] {
  return tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}
