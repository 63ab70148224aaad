import type { AgentSpec } from '@agent-reach/shared';
import type { FastifyRequest } from 'fastify';
import { requirePrincipal, type Principal } from '../auth.js';
import type { ApiContext } from '../options.js';
import { modelNotFound } from './openai-error.js';

/** Who owns every model this door lists. */
export const MODEL_OWNER = 'agent-reach';

/** One entry of `GET /v1/models`: OpenAI's model object, plus the models the agent is declared to ask. */
export interface ModelEntry {
  /** The agent's name: what `model` names in a chat completion or a response. */
  id: string;
  object: 'model';
  /** Unix seconds: when this server read its agents. */
  created: number;
  owned_by: typeof MODEL_OWNER;
  /** The agent's description, when it has one. */
  description?: string;
  /** The models the agent asks, in order (its `model`, then its `fallback`); absent: the default model. */
  models?: string[];
}

function entry(agent: AgentSpec, created: number): ModelEntry {
  const declared = [...(agent.model === undefined ? [] : [agent.model]), ...(agent.fallback ?? [])];
  return {
    id: agent.name,
    object: 'model',
    created,
    owned_by: MODEL_OWNER,
    ...(agent.description === undefined ? {} : { description: agent.description }),
    ...(declared.length > 0 ? { models: declared } : {}),
  };
}

const mayUse = (principal: Principal, agent: string) => !principal.agents || principal.agents.has(agent);

/**
 * `GET /v1/models` and `GET /v1/models/:id`: the agents the key may use, as OpenAI lists models, so that
 * tools that list models first find them. An agent the key may not use is missing, as an unknown one is.
 */
export function createModelsDoor(ctx: ApiContext) {
  const created = Math.floor(Date.now() / 1000);
  return {
    list(request: FastifyRequest) {
      const principal = requirePrincipal(ctx.auth, request);
      const data = [...ctx.deps.agents.agents.values()]
        .filter((agent) => mayUse(principal, agent.name))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((agent) => entry(agent, created));
      return { object: 'list' as const, data };
    },
    retrieve(request: FastifyRequest<{ Params: { id: string } }>) {
      const principal = requirePrincipal(ctx.auth, request);
      const { id } = request.params;
      const agent = ctx.deps.agents.agents.get(id);
      if (!agent || !mayUse(principal, id)) throw modelNotFound(id);
      return entry(agent, created);
    },
  };
}
