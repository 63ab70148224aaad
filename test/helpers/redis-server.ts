// A private redis-server is part of the fault harness (packages/faults); the tests reuse it.
export {
  answers,
  freePort,
  probeRedis,
  startPrivateRedis,
  type PrivateRedis,
} from '@agent-reach/faults/processes';
