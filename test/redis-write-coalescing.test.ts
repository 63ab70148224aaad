import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedis, waitReady } from '@agent-reach/shared';
import { REDIS_URL, waitFor } from './helpers/redis.js';

/** Counts the system-level writes a connection's socket makes: one `_write` or `_writev` each. */
function countWrites(client: Redis): { writes: number; chunks: number } {
  const socket = client.stream as Socket & {
    _write: (...args: unknown[]) => void;
    _writev: (chunks: unknown[], cb: unknown) => void;
  };
  const counts = { writes: 0, chunks: 0 };
  const write = socket._write.bind(socket);
  const writev = socket._writev.bind(socket);
  socket._write = (...args: unknown[]) => {
    counts.writes += 1;
    counts.chunks += 1;
    write(...args);
  };
  socket._writev = (chunks: unknown[], cb: unknown) => {
    counts.writes += 1;
    counts.chunks += chunks.length;
    writev(chunks, cb);
  };
  return counts;
}

describe('Redis connections send the commands issued together in two socket writes: the first at once, the rest in one', () => {
  const clients: Redis[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
  });

  async function connect(coalesceWrites?: boolean): Promise<Redis> {
    const client = createRedis(REDIS_URL, 'worker', coalesceWrites === undefined ? {} : { coalesceWrites });
    clients.push(client);
    await waitReady(client, REDIS_URL);
    return client;
  }

  it('sends 50 commands issued together in two socket writes, the first one alone, answered in order', async () => {
    const client = await connect();
    const key = `test:coalesce:${process.pid}:${Date.now()}`;
    const counts = countWrites(client);
    const replies = await Promise.all(Array.from({ length: 50 }, () => client.incr(key)));
    await client.del(key);
    expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    // The first INCR at once, the 49 others in one write; the DEL, issued once they were answered, alone.
    expect(counts).toEqual({ writes: 3, chunks: 51 });
  });

  it('writes each command on its own when coalescing is turned off (the comparison above)', async () => {
    const client = await connect(false);
    const key = `test:coalesce-off:${process.pid}:${Date.now()}`;
    const counts = countWrites(client);
    await Promise.all(Array.from({ length: 50 }, () => client.incr(key)));
    await client.del(key);
    expect(counts.writes).toBe(51);
  });

  it("coalesces a duplicate's writes (BullMQ's connections are duplicates) and a reconnected socket's", async () => {
    const client = await connect();
    const dup = client.duplicate();
    clients.push(dup);
    await waitReady(dup, REDIS_URL);
    const dupCounts = countWrites(dup);
    await Promise.all(Array.from({ length: 10 }, () => dup.ping()));
    expect(dupCounts).toEqual({ writes: 2, chunks: 10 });

    const before = client.stream;
    // The server drops the connection: ioredis connects again with a new socket.
    const id = await client.client('ID');
    const admin = await connect();
    await admin.client('KILL', 'ID', String(id));
    await waitFor(() => client.status === 'ready' && client.stream !== before, 10_000);
    const counts = countWrites(client);
    expect(await Promise.all(Array.from({ length: 10 }, () => client.ping()))).toEqual(
      Array.from({ length: 10 }, () => 'PONG'),
    );
    expect(counts).toEqual({ writes: 2, chunks: 10 });
  });

  it('sends a command issued alone at once, without corking the socket', async () => {
    const client = await connect();
    const socket = client.stream as Socket;
    const counts = countWrites(client);
    const pong = client.ping();
    // Handed to the socket in the same tick: nothing waits in its buffer for a flush.
    expect(socket.writableCorked).toBe(0);
    expect(counts).toEqual({ writes: 1, chunks: 1 });
    expect(await pong).toBe('PONG');
  });

  it('flushes the commands written just before the connection quits', async () => {
    const client = await connect();
    const key = `test:coalesce-quit:${process.pid}:${Date.now()}`;
    const set = client.set(key, 'kept', 'EX', 60);
    const quit = client.quit();
    expect(await set).toBe('OK');
    expect(await quit).toBe('OK');
    clients.splice(clients.indexOf(client), 1);
    const reader = await connect();
    expect(await reader.get(key)).toBe('kept');
    await reader.del(key);
  });
});
