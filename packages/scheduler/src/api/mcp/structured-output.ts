import { answerJson, type AgentSpec } from '@agent-reach/shared';

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
 * text. Only an agent whose `output_schema` describes an object has one (MCP's `outputSchema` is an
 * object schema); the others answer with text only.
 */
export function structuredOutputOf(agent: AgentSpec): StructuredOutput | undefined {
  const schema = agent.output_schema;
  if (schema?.type !== 'object') return undefined;
  return {
    schema: schema as StructuredOutput['schema'],
    parse(answer) {
      try {
        const value: unknown = JSON.parse(answerJson(answer));
        return typeof value === 'object' && value !== null && !Array.isArray(value)
          ? (value as Record<string, unknown>)
          : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
