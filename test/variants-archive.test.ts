import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, Outbox, type Archiver } from '@agent-reach/archive';
import type { RunVariant } from '@agent-reach/protocol';
import { RunControl } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import { request, startApiHarness, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { startTestArchiver, testDatabase } from './helpers/postgres.js';

describe('per-run variants in the run archive (real Redis, PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let h: ApiHarness;
  let archive: OpenedRunArchive;
  let url: string;
  let closeServer: () => Promise<void>;
  let archiver: Archiver | undefined;

  beforeAll(async () => {
    db = await testDatabase();
    await migrate(db.url);
    h = await startApiHarness({}, { DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '1' });
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
  });
  afterAll(async () => {
    await archiver?.close();
    await closeServer?.();
    await archive?.close();
    await h?.close();
    await db?.drop();
  });

  it("keeps a run's variant in its archived record: GET /v1/runs/{id} shows it once Redis let the run go, and the eval's metadata finds the run", async () => {
    const variant: RunVariant = {
      name: 'archived-variant',
      overrides: { instructions: 'Answer briefly.', tools: { noop: { description: 'Does nothing.' } } },
    };
    const created = await request(url, 'POST', '/v1/runs', {
      body: {
        agent: 'test_agent',
        input: 'hello',
        metadata: { eval: 'ev1', eval_variant: variant.name, eval_case: 'c1' },
        variant,
      },
    });
    expect(created.status, created.text).toBe(201);
    const runId = created.json.run_id as string;
    await waitFor(
      async () => (await request(url, 'GET', `/v1/runs/${runId}`)).json.status === 'succeeded',
      15_000,
      'the run to succeed',
    );
    const live = (await request(url, 'GET', `/v1/runs/${runId}`)).json;
    expect(live.variant).toEqual(variant);

    archiver = await startTestArchiver({ redis: h.producer, keys: h.keys, databaseUrl: db.url });
    const outbox = new Outbox(h.producer, h.keys);
    await waitFor(async () => (await outbox.size()) === 0, 15_000, 'the outbox to drain');
    await waitFor(
      async () => ((await h.producer.exists(h.keys.runState(runId))) === 0 ? true : undefined),
      15_000,
      'Redis to let the archived run go',
    );
    const row = await db.pool.query('SELECT state FROM archived_runs WHERE run_id = $1', [runId]);
    expect(row.rows[0]?.state?.variant).toEqual(variant);

    const archived = await request(url, 'GET', `/v1/runs/${runId}`);
    expect(archived.status).toBe(200);
    expect(archived.json).toEqual(live);
    const listed = await request(url, 'GET', `/v1/runs?metadata=eval_variant=${variant.name}`);
    expect(listed.json.runs.map((r: { run_id: string }) => r.run_id)).toEqual([runId]);
  });
});
