// The root suites take the Redis helpers from the workspace's test package, as the packages' own tests do.
export { REDIS_URL, testRedis, waitFor } from '@agent-reach/testing';
