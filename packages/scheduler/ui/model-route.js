/**
 * Which model answered a turn and what was passed over before it, from a run's `llm_request` and
 * `llm_error` events (routed runs: docs/providers.md). Plain functions, shared by the run's timeline and
 * its waterfall.
 */

/** Why a model was passed over, in words. */
export function passedOverReason(f) {
  return f.reason === 'breaker_open' ? 'breaker open' : 'failed';
}

/** "a/answer failed, c/x breaker open": the models a turn passed over; '' when none. */
export function passedOver(e) {
  return (e.fallback ?? []).map((f) => `${f.model} ${passedOverReason(f)}`).join(', ');
}

/** The turn's route in one line: "answered by b/answer after a/answer failed"; '' for an unrouted turn. */
export function routeLine(e) {
  const over = passedOver(e);
  if (e.type === 'llm_error') return over ? `every model failed: ${over}` : '';
  if (e.answered_by === undefined) return '';
  return `answered by ${e.answered_by}${over ? ` after ${over}` : ''}`;
}
