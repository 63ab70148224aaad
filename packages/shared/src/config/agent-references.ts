/**
 * What an agent's handoffs and agent tools share: a list of other agents, each a bare name or an object
 * with `agent` and fields of its own, and the longest tool name the model may be offered for one.
 */

/** Longest tool name a model provider accepts (OpenAI's function names). */
export const MAX_TOOL_NAME_CHARS = 64;

/** Most agents one list (handoffs, agent tools) may name. */
const MAX_AGENT_REFERENCES = 32;

/**
 * JSON Schema of a list of agents an agent refers to: a bare name, or `{agent, description?, …fields}`
 * with nothing else.
 */
export function agentReferenceList(fields: Readonly<Record<string, unknown>>) {
  return {
    type: 'array',
    maxItems: MAX_AGENT_REFERENCES,
    items: {
      anyOf: [
        { type: 'string', minLength: 1 },
        {
          type: 'object',
          additionalProperties: false,
          required: ['agent'],
          properties: {
            agent: { type: 'string', minLength: 1 },
            description: { type: 'string', maxLength: 2000 },
            ...fields,
          },
        },
      ],
    },
  } as const;
}
