import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { maskUrl, reconnectDelayMs } from '@agent-reach/protocol';
import { createLogger, createRedis, waitReady } from '@agent-reach/shared';
import { ROOT } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';

const run = promisify(execFile);

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A pino logger whose lines are kept, raw, in `lines`. */
function capturingLogger() {
  const lines: string[] = [];
  const logger = createLogger('test', {}, { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

describe('Redis connections: errors, backoff, masked passwords', () => {
  afterEach(() => vi.restoreAllMocks());

  it('masks the password of a Redis URL and keeps the rest readable', () => {
    expect(maskUrl('redis://:s3cret@redis.internal:6380/2')).toBe('redis://:***@redis.internal:6380/2');
    expect(maskUrl('rediss://admin:s3cret@h:6379')).toBe('rediss://admin:***@h:6379');
    expect(maskUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(maskUrl('redis://h:6379/0?password=s3cret')).not.toContain('s3cret');
    expect(maskUrl('not a url //user:s3cret@h')).not.toContain('s3cret');
  });

  it('reconnects with exponential backoff capped at 5 s, duplicates included', () => {
    const delays = Array.from({ length: 10 }, (_, i) => reconnectDelayMs(i + 1));
    expect(delays).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000]);
    const redis = createRedis('redis://127.0.0.1:1', 'producer', { lazyConnect: true });
    const dup = redis.duplicate();
    expect(redis.options.retryStrategy).toBe(reconnectDelayMs);
    expect(dup.options.retryStrategy).toBe(reconnectDelayMs);
    redis.disconnect();
    dup.disconnect();
  });

  it('logs each connection error as one structured line with the password masked, duplicates included, and prints no raw error', async () => {
    const rawErrors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { logger, lines } = capturingLogger();
    const url = `redis://:s3cret@127.0.0.1:${await closedPort()}`;
    const redis = createRedis(url, 'worker', { logger, connectionName: 'primary' });
    // As BullMQ does for its blocking connection, and the project for its readers.
    const dup = redis.duplicate({ connectionName: 'duplicate' });
    try {
      const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      await waitFor(
        () => ['primary', 'duplicate'].every((c) => parsed().filter((l) => l.connection === c).length >= 2),
        10_000,
        'two error lines from each connection',
      );
      expect(rawErrors).not.toHaveBeenCalled();
      for (const line of lines) {
        expect(line.trim().split('\n')).toHaveLength(1);
        expect(line).not.toContain('s3cret');
        expect(JSON.parse(line)).toMatchObject({
          level: 40,
          msg: 'redis connection error',
          redis: expect.stringContaining(':***@127.0.0.1:'),
          err: { code: 'ECONNREFUSED' },
        });
        // A connection error's stack says nothing: none is logged.
        expect((JSON.parse(line) as { err: { stack?: string } }).err.stack ?? '').toBe('');
      }
      const attempts = parsed()
        .filter((l) => l.connection === 'primary')
        .map((l) => l.attempt);
      expect(attempts.slice(0, 2)).toEqual([1, 2]);
    } finally {
      redis.disconnect();
      dup.disconnect();
    }
  });

  it('says which Redis did not answer without its password', async () => {
    const url = `redis://:s3cret@127.0.0.1:${await closedPort()}`;
    const redis = createRedis(url, 'producer', { logger: createLogger('test', { level: 'silent' }) });
    try {
      const err = await waitReady(redis, url, 300).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(
        /^Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ did not answer within 300 ms/,
      );
    } finally {
      redis.disconnect();
    }
  });

  it('enqueueRun against an unreachable Redis rejects with one clear REDIS_UNAVAILABLE error and prints nothing else', async () => {
    const url = `redis://:s3cret@127.0.0.1:${await closedPort()}`;
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'test/fixtures/enqueue-unreachable.ts'), url],
      { cwd: ROOT, timeout: 20_000 },
    );
    expect(stderr).toBe('');
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const outcome = JSON.parse(lines[0] ?? '') as { rejected?: { code: string; message: string } };
    expect(outcome.rejected?.code).toBe('REDIS_UNAVAILABLE');
    expect(outcome.rejected?.message).toMatch(
      /^Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+ did not answer within 3000 ms \(last error: connect ECONNREFUSED/,
    );
    expect(outcome.rejected?.message).toMatch(/host, port and password/);
    expect(stdout).not.toContain('s3cret');
  }, 30_000);
});
