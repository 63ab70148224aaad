/** What both demos share: the Redis check and the all-in-one stack, announced the same way. */
import { startDev, type DevStack } from '@agent-reach/cli';
import { connectRedis, waitReady } from '@agent-reach/shared';

/** Starts the all-in-one stack on the local Redis and prints where it is; undefined when Redis is away. */
export async function startDemoStack(env: Record<string, string | undefined>): Promise<DevStack | undefined> {
  const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const probe = connectRedis(redisUrl, 'producer');
  try {
    await waitReady(probe, redisUrl, 3000);
  } catch {
    console.error(`Redis does not answer at ${redisUrl}. Start one (redis-server) or set REDIS_URL.`);
    probe.disconnect();
    return undefined;
  }
  await probe.quit();

  const stack = await startDev({ API_PORT: '0', ...env });
  console.log(
    stack.simUrl
      ? `No model configured (OPENAI_API_KEY is unset): llm-sim, the bundled simulator, plays the model (scenario "${stack.model}").\n` +
          '  The queues, executor, tools, scheduler and HTTP API are real.'
      : `Model: ${stack.model}`,
  );
  console.log(`API:        ${stack.apiUrl}  (Authorization: Bearer ${stack.apiKey})`);
  console.log(`Docs:       ${stack.docsUrl}`);
  console.log(`Bull Board: ${stack.boardUrl}\n`);
  return stack;
}

/** Exits with the demo's code, or 1 with the message of what it threw. */
export function exitWith(main: Promise<number>): void {
  main.then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
