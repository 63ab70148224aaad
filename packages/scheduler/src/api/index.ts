export { createApiServer, startApiServer } from './server.js';
export type { ApiServer } from './server.js';
export type { ApiServerDeps, ApiServerOptions } from './options.js';
export type { ApiKeyConfig, Principal } from './auth.js';
export { ApiError } from './errors.js';
export type { ApiErrorBody } from './errors.js';
export { summaryView } from './run-view.js';
export { IdempotencyStore, bodyHash } from './idempotency.js';
export { BOARD_PATH } from './bull-board.js';
export {
  DEFAULT_API_PORT,
  DEFAULT_API_HOST,
  DEFAULT_API_RATE_LIMIT_PER_MINUTE,
  DEFAULT_API_BODY_LIMIT_BYTES,
  DEFAULT_IDEMPOTENCY_TTL_S,
  DEFAULT_SSE_HEARTBEAT_MS,
  DEFAULT_MAX_EVENT_STREAMS,
} from './constants.js';
