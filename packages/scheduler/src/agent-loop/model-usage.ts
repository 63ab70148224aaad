import type { ModelPrice } from '@agent-reach/shared';
import type { RunState, Usage } from './run-state.js';
import { turnCost } from '../model/providers.js';

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
