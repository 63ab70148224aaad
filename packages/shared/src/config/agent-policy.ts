/**
 * An agent's policy beyond its tools: how its topics are enforced, labelled example requests for its
 * vocabulary, its own loop guard settings, and the context providers called before its loop. Parsed as
 * part of the agents document (see `agents.ts`), checked here.
 */

/** What happens to a request the classifier places outside the agent's `allowed_topic`. */
export type TopicPolicy = 'refuse' | 'warn';

export const TOPIC_POLICIES: readonly TopicPolicy[] = ['refuse', 'warn'];

/** Loop guard settings of one agent; each absent one is the fleet's default. */
export interface AgentLoopSettings {
  /** The same calls this many turns in a row earn a nudge; once more stops the run. */
  readonly repeat_limit?: number;
  /** Tool rounds in a row whose every call failed (argument fixes aside) that stop the run. */
  readonly max_failed_rounds?: number;
  /** Rounds in a row spent fixing the model's own arguments (`invalid_arguments`) that stop the run. */
  readonly max_argument_fix_rounds?: number;
  /** Output tokens the model may write in one turn. */
  readonly max_output_tokens?: number;
  /** Prompt size that triggers compaction, in tokens. */
  readonly compaction_threshold_tokens?: number;
  /** Handoffs a run may have made when this agent is in charge and hands off again (see docs/handoffs.md). */
  readonly max_handoffs?: number;
  /** Times a final answer leaving steps of the task stack open is sent back before the run ends `tasks_incomplete`. */
  readonly task_reminders?: number;
}

/** A tool called with the request before the loop; its shaped result is attached to the model's input. */
export interface ContextProviderSpec {
  /** One of the agent's tools. */
  readonly tool: string;
  /** The call's arguments; `{{input}}` in a string value is replaced by the request. Default `{query: "{{input}}"}`. */
  readonly arguments?: Readonly<Record<string, unknown>>;
  /** A failed call fails the run (`context_failed`) when true; when false it is recorded and skipped. Default false. */
  readonly required?: boolean;
  /** Characters of the result attached at most. Default `DEFAULT_CONTEXT_PROVIDER_MAX_CHARS`. */
  readonly max_chars?: number;
}

/** The policy fields of an agent's declaration. */
export interface AgentPolicy {
  /** Default `refuse` when the agent has `allowed_topic`. */
  readonly topic_policy?: TopicPolicy;
  /** Example requests by the tool or topic they are about: they join the agent's intent vocabulary. */
  readonly examples?: Readonly<Record<string, readonly string[]>>;
  readonly loop?: AgentLoopSettings;
  readonly context_providers?: readonly ContextProviderSpec[];
}

const positive = (minimum: number, maximum: number) => ({ type: 'integer', minimum, maximum }) as const;

/** JSON Schema properties of the policy fields, merged into the agent's schema. */
export const agentPolicyProperties = {
  topic_policy: { enum: TOPIC_POLICIES },
  examples: {
    type: 'object',
    additionalProperties: {
      type: 'array',
      minItems: 1,
      items: { type: 'string', minLength: 1, maxLength: 2000 },
    },
  },
  loop: {
    type: 'object',
    additionalProperties: false,
    properties: {
      repeat_limit: positive(1, 20),
      max_failed_rounds: positive(1, 50),
      max_argument_fix_rounds: positive(1, 50),
      max_output_tokens: positive(16, 200_000),
      compaction_threshold_tokens: positive(1000, 10_000_000),
      max_handoffs: positive(1, 100),
      task_reminders: positive(0, 5),
    },
  },
  context_providers: {
    type: 'array',
    maxItems: 8,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['tool'],
      properties: {
        tool: { type: 'string', minLength: 1 },
        arguments: { type: 'object' },
        required: { type: 'boolean' },
        max_chars: positive(100, 100_000),
      },
    },
  },
} as const;

/**
 * Problems of one agent's policy that the schema cannot see, each naming the agent and the field: a
 * provider or an example naming a tool the agent does not have, a topic policy without topics.
 */
export function agentPolicyProblems(
  spec: {
    tools?: unknown;
    allowed_topic?: unknown;
  } & Partial<AgentPolicy>,
  where: string,
): string[] {
  const problems: string[] = [];
  const tools = new Set(Array.isArray(spec.tools) ? spec.tools.filter((t) => typeof t === 'string') : []);
  const topics = new Set(
    Array.isArray(spec.allowed_topic) ? spec.allowed_topic.filter((t) => typeof t === 'string') : [],
  );
  if (spec.topic_policy !== undefined && topics.size === 0)
    problems.push(`${where}: topic_policy "${String(spec.topic_policy)}" needs allowed_topic`);
  if (Array.isArray(spec.context_providers)) {
    spec.context_providers.forEach((p, j) => {
      if (typeof p?.tool === 'string' && !tools.has(p.tool))
        problems.push(`${where}: context_providers[${j}].tool "${p.tool}" is not one of the agent's tools`);
    });
  }
  if (spec.examples && typeof spec.examples === 'object') {
    for (const label of Object.keys(spec.examples)) {
      if (!tools.has(label) && !topics.has(label))
        problems.push(
          `${where}: examples."${label}" names neither one of the agent's tools nor one of its allowed_topic`,
        );
    }
  }
  return problems;
}
