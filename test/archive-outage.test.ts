import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, Outbox, type Archiver } from '@agent-reach/archive';
import { startPrivatePostgres, type PrivatePostgres } from '@agent-reach/faults';
import { RunControl } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import { startApiHarness, request, type ApiHarness } from './helpers/api.js';
import { startTestArchiver } from './helpers/postgres.js';
import { waitFor } from './helpers/redis.js';

describe('run archive with its PostgreSQL stopped: live runs are read, created and followed from Redis alone; archived reads answer 503 naming PostgreSQL (private PostgreSQL, real Redis)', () => {
  let pg: PrivatePostgres;
  let h: ApiHarness;
  let archive: OpenedRunArchive;
  let url: string;
  let closeServer: () => Promise<void>;
  let archiver: Archiver;
  const call = (method: string, path: string, init?: Parameters<typeof request>[3]) =>
    request(url, method, path, init);

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    await migrate(pg.url);
    h = await startApiHarness({}, { DATABASE_URL: pg.url, ARCHIVED_RUN_RETENTION_S: '1' });
    archive = openRunArchive(h.config, h.producer, h.keys)!;
    const control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    const server = await h.extraServer({}, { control });
    url = server.url;
    closeServer = () => server.close();
    archiver = await startTestArchiver({ redis: h.producer, keys: h.keys, databaseUrl: pg.url });
  }, 90_000);
  afterAll(async () => {
    await archiver?.close();
    await closeServer?.();
    await archive?.close();
    await h?.close();
    await pg?.destroy();
  });

  const startRun = async (input: string) => {
    const res = await call('POST', '/v1/runs', { body: { agent: 'test_agent', input } });
    expect(res.status, res.text).toBe(201);
    const runId = res.json.run_id as string;
    await waitFor(async () => (await call('GET', `/v1/runs/${runId}`)).json.status === 'succeeded', 15_000);
    return runId;
  };

  it('answers every read of a run Redis holds while PostgreSQL is down, and an archived run 503 with Retry-After naming PostgreSQL until it is back', async () => {
    const old = await startRun('archived before the outage');
    const outbox = new Outbox(h.producer, h.keys);
    await waitFor(async () => (await outbox.size()) === 0, 15_000, 'the outbox to drain');
    await waitFor(
      async () => (await h.producer.exists(h.keys.runState(old))) === 0,
      15_000,
      'Redis to let it go',
    );

    await pg.kill();
    // The README's flow during the outage: create a run, read it, follow its events.
    const live = await startRun('created during the outage');
    const read = await call('GET', `/v1/runs/${live}`);
    expect(read.status, read.text).toBe(200);
    expect(read.json).toMatchObject({ run_id: live, status: 'succeeded' });
    const events = await call('GET', `/v1/runs/${live}/events`);
    expect(events.status, events.text).toBe(200);
    expect(events.text).toContain('run_finished');

    const archived = await call('GET', `/v1/runs/${old}`);
    expect(archived.status, archived.text).toBe(503);
    expect(archived.json.error.code).toBe('UNAVAILABLE');
    expect(archived.json.error.message).toContain('PostgreSQL');
    expect(archived.json.error.message).not.toContain('Redis');
    expect(archived.headers.get('retry-after')).toBe('5');
    const listing = await call('GET', '/v1/runs');
    expect(listing.status, listing.text).toBe(503);
    expect(listing.json.error.message).toContain('PostgreSQL');
    // The run that finished meanwhile waits in the outbox, its record held in Redis.
    expect(await outbox.size()).toBeGreaterThan(0);

    await pg.start();
    await waitFor(async () => (await outbox.size()) === 0, 30_000, 'the outbox to drain after the outage');
    expect((await call('GET', `/v1/runs/${old}`)).status).toBe(200);
    expect((await call('GET', `/v1/runs/${live}`)).json.status).toBe('succeeded');
  });
});
