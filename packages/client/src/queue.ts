// `@agent-reach/client/queue`: starting runs through Redis. Needs `bullmq` and `ioredis` installed beside
// the client; the HTTP client (`@agent-reach/client`) needs neither.
export { enqueueRun, runJobOptions, RUN_ID_PATTERN, RESERVED_RUN_IDS } from './enqueue.js';
export type { EnqueueRunOptions, RunJobFields } from './enqueue.js';
export { AgentReachApiError } from './errors.js';
export type { ClientErrorCode } from './errors.js';
