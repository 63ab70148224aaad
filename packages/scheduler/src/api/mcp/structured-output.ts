import type { AgentSpec } from '@agent-reach/shared';

/** An agent's structured output as its MCP tool declares it (`outputSchema`) and returns it. */
export interface StructuredOutput {
  /** JSON Schema of the answer: an object schema, as MCP requires of `outputSchema`. */
  readonly schema: { type: 'object'; [keyword: string]: unknown };
  /** The run's answer as the object the schema describes; undefined when it is not one. */
  parse(answer: string): Record<string, unknown> | undefined;
}

/**
 * Where an agent that declares a structured output plugs into the MCP door: the tool lists its schema
 * as `outputSchema`, and a successful call returns the parsed answer as `structuredContent` beside the
 * text. No agent declares one yet, so every agent answers with text only.
 */
export function structuredOutputOf(_agent: AgentSpec): StructuredOutput | undefined {
  return undefined;
}
