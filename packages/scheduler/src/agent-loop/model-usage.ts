import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { ModelPrice } from '@agent-reach/shared';
import type { LlmClient } from '../model/llm.js';
import { readUsage } from './model-answer.js';
import { addUsage, type RunContext } from './run-context.js';
import type { RunState, Usage } from './run-state.js';
import { routeOf, turnCost, type TurnRoute } from '../model/providers.js';

/**
 * Adds a turn's tokens to the run's account of the model that answered it (`<provider>/<model>`), and
 * its cost to the model's and the run's when the model has a price. Returns the turn's cost.
 */
export function addModelUsage(
  state: RunState,
  model: string,
  usage: Usage,
  price: ModelPrice | undefined,
): number | undefined {
  const account = ((state.modelUsage ??= {})[model] ??= { turns: 0, prompt_tokens: 0, completion_tokens: 0 });
  account.turns += 1;
  account.prompt_tokens += usage.prompt_tokens;
  account.completion_tokens += usage.completion_tokens;
  const cost = turnCost(price, usage);
  if (cost !== undefined) {
    account.cost = (account.cost ?? 0) + cost;
    state.cost = (state.cost ?? 0) + cost;
  }
  return cost;
}

/**
 * Charges one model answer of a run (a turn, a plan, any request the platform makes for it): its tokens
 * to the run's usage and to the account of the model that answered, its cost when the model has a price.
 */
export function chargeAnswer(
  state: RunState,
  res: ChatCompletion,
  llm: LlmClient,
): { usage?: Usage; route?: TurnRoute; cost?: number } {
  const usage = readUsage(res);
  const route = routeOf(res);
  if (!usage) return route ? { route } : {};
  addUsage(state, usage);
  const cost = addModelUsage(state, route?.id ?? `default/${llm.model}`, usage, route?.price);
  return { usage, ...(route ? { route } : {}), ...(cost !== undefined ? { cost } : {}) };
}

/** What a model request's event (`llm_request`, `llm_usage`) records of its charged answer. */
export interface ChargedRequest {
  /** The model the answer names, else the client's. */
  model: string;
  latency_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** The declared model that answered (`<provider>/<model>`), on a routed client. */
  answered_by?: string;
  fallback?: NonNullable<TurnRoute['skipped']>;
  cost?: number;
}

/** Charges one model answer (see `chargeAnswer`) and returns what its event records. */
export function chargeRequest(
  state: RunState,
  res: ChatCompletion,
  llm: LlmClient,
  latencyMs: number,
): ChargedRequest {
  const { usage, route, cost } = chargeAnswer(state, res, llm);
  return {
    model: (typeof res.model === 'string' && res.model.slice(0, 200)) || llm.model,
    latency_ms: latencyMs,
    prompt_tokens: usage?.prompt_tokens ?? 0,
    completion_tokens: usage?.completion_tokens ?? 0,
    ...(route ? { answered_by: route.id } : {}),
    ...(route?.skipped.length ? { fallback: route.skipped } : {}),
    ...(cost !== undefined ? { cost } : {}),
  };
}

/**
 * Charges a model request made for the run beside its turns (its plan, a guardrail agent's verdict) and
 * records it as an `llm_usage` event: the metrics count its tokens and cost as they count a turn's, so
 * they agree with the run's usage.
 */
export function chargeSideRequest(
  run: Pick<RunContext, 'state' | 'emit'>,
  res: ChatCompletion,
  llm: LlmClient,
  latencyMs: number,
  purpose: { purpose: 'plan' } | { purpose: 'guardrail'; guardrail: string },
): ChargedRequest {
  const charged = chargeRequest(run.state, res, llm, latencyMs);
  run.emit({ type: 'llm_usage', ...purpose, ...charged });
  return charged;
}
