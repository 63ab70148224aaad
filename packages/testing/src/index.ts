export { REDIS_URL, testRedis, waitFor } from './redis.js';
