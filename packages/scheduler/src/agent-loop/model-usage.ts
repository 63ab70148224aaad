import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { ModelPrice } from '@agent-reach/shared';
import type { LlmClient } from '../model/llm.js';
import { readUsage } from './model-answer.js';
import { addUsage } from './run-context.js';
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
