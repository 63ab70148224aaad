import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { createPool, migrate, Outbox, startArchiver, type Archiver, triesKey } from '@agent-reach/archive';
import { RunControl, replayRun } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import { createLogger } from '@agent-reach/shared';
import { FULL_KEY, startApiHarness, request, TEST_MODELS, type ApiHarness } from './helpers/api.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { waitFor } from './helpers/redis.js';
import { startTestArchiver, testDatabase } from './helpers/postgres.js';

const cursorOf = (json: string) => Buffer.from(json).toString('base64url');

describe('run archive edges: bad filters refused before SQL, replays read, late checkpoints and poison runs archived or set aside, live reads without PostgreSQL (real Redis, PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let h: ApiHarness;
  let archive: OpenedRunArchive;
  let control: RunControl;
  let url: string;
  let closeServer: () => Promise<void>;
  let archiver: Archiver | undefined;
  const extraArchivers: Archiver[] = [];
  const call = (method: string, path: string, init?: Parameters<typeof request>[3]) =>
    request(url, method, path, init);

  beforeAll(async () => {
    db = await testDatabase();
    await migrate(db.url);
    h = await startApiHarness({}, { DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '1' });
    addCommonScenarios(h.sim);
    archive = openRunArchive(h.config, h.producer, h.keys)!;
    control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    const server = await h.extraServer({ allowedModels: TEST_MODELS }, { control });
    url = server.url;
    closeServer = () => server.close();
  });
  afterAll(async () => {
    for (const a of extraArchivers) await a.close();
    await archiver?.close();
    await closeServer?.();
    await archive?.close();
    await h?.close();
    await db?.drop();
  });

  const startRun = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/v1/runs', { body });
    expect(res.status, res.text).toBe(201);
    const runId = res.json.run_id as string;
    await waitFor(async () => (await call('GET', `/v1/runs/${runId}`)).json.status === 'succeeded', 15_000);
    return runId;
  };
  const archived = async (runIds: string[]) =>
    (
      await db.pool.query<{ run_id: string }>(
        'SELECT run_id FROM archived_runs WHERE run_id = ANY($1::text[])',
        [runIds],
      )
    ).rows.map((r) => r.run_id);
  const archiveAll = async () => {
    archiver ??= await startTestArchiver({ redis: h.producer, keys: h.keys, databaseUrl: db.url });
    const outbox = new Outbox(h.producer, h.keys);
    await waitFor(async () => (await outbox.size()) === 0, 15_000, 'the outbox to drain');
  };
  const goneFromRedis = (runIds: string[]) =>
    waitFor(
      async () =>
        (await Promise.all(runIds.map((id) => h.producer.exists(h.keys.runState(id))))).every((n) => n === 0),
      15_000,
      'Redis to let the archived runs go',
    );

  it('answers 400 naming the parameter for each out-of-range, non-finite, non-integer or NUL-bearing filter and cursor, never a 500', async () => {
    const bad: Array<[query: string, parameter: string]> = [
      ['metadata=note%3Da%00b', 'metadata'],
      ...[
        '99999999999999999999999',
        '9223372036854775808',
        '9223372036854775807',
        '1e400',
        'Infinity',
      ].flatMap((v): Array<[string, string]> => [
        [`since=${v}`, 'since'],
        [`until=${v}`, 'until'],
      ]),
      ...['[1.5,"x"]', '[1e400,"x"]', '[1,"\\u0000"]'].map((c): [string, string] => [
        `cursor=${cursorOf(c)}`,
        'cursor',
      ]),
    ];
    for (const [query, parameter] of bad) {
      const res = await call('GET', `/v1/runs?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(400);
      expect(res.json.error.code, query).toBe('VALIDATION_FAILED');
      expect(res.json.error.message, query).toContain(parameter);
    }
  });

  it('reads a replayed run through the API, live and once archived', async () => {
    const original = await startRun({ agent: 'test_agent', input: 'weather?', model: 'weather-then-answer' });
    const replay = await replayRun(original, { runner: h.schedulers[0]!.runner, store: control.store });
    const live = await call('GET', `/v1/runs/${replay.runId}`);
    expect(live.status, live.text).toBe(200);
    expect(live.json.steps).toEqual([
      expect.objectContaining({ tool: 'query_weather', ok: true, attempts: expect.any(Number) }),
    ]);
    await archiveAll();
    await goneFromRedis([original, replay.runId]);
    const fromArchive = await call('GET', `/v1/runs/${replay.runId}`);
    expect(fromArchive.status, fromArchive.text).toBe(200);
    expect(fromArchive.json).toEqual(live.json);
  });

  it('archives a run handed off before any record of it existed, however late its only checkpoint lands', async () => {
    await archiveAll();
    const runId = `run_late_${Date.now()}`;
    const outbox = new Outbox(h.producer, h.keys);
    // The hand-off, then a pause: an archiver looks at the entry while the run has no record at all (and
    // either marks it missing and keeps it, or drops it).
    await outbox.add(runId, Date.now());
    await waitFor(
      async () =>
        (await h.producer.hexists(triesKey(h.keys), `${runId}:missing`)) === 1 ||
        (await h.producer.zscore(outbox.key, runId)) === null,
      15_000,
      'an archiver to look at the entry of a run without a record',
    );
    // Then its first checkpoint, which is also its final one (written by a store that hands nothing off).
    const store = new RunStore(h.producer, h.keys);
    const { writer } = await store.claim(runId);
    const state = h.schedulers[0]!.runner.newState({ agent: 'test_agent', input: 'late', runId });
    const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    state.status = 'succeeded';
    state.outcome = {
      status: 'succeeded',
      reason: 'final_answer',
      answer: 'ok',
      usage,
      iterations: 0,
      steps: [],
    };
    await writer.prepare(state, [])();
    await waitFor(async () => (await archived([runId])).length === 1, 20_000, 'the late run to be archived');
    // Its entry is gone (the outbox is shared with the other runs of this file, which may still be in it).
    await waitFor(
      async () => (await h.producer.zscore(outbox.key, runId)) === null,
      20_000,
      'the archived run to leave the outbox',
    );
  });

  it('stores NUL and lone surrogates as U+FFFD, and archives the ordinary runs due with them', async () => {
    const odd = await Promise.all([
      startRun({ agent: 'test_agent', input: 'nul a\u0000b' }),
      startRun({ agent: 'test_agent', input: 'surrogate c\ud800d' }),
    ]);
    const plain = await startRun({ agent: 'test_agent', input: 'plain' });
    await archiveAll();
    expect((await archived([...odd, plain])).sort()).toEqual([...odd, plain].sort());
    const rows = await db.pool.query<{ run_id: string; input: string }>(
      `SELECT run_id, meta->>'inputPreview' AS input FROM archived_runs WHERE run_id = ANY($1::text[])`,
      [odd],
    );
    expect(rows.rows.map((r) => r.input).sort()).toEqual(['nul a\ufffdb', 'surrogate c\ufffdd']);
  });

  it('sets a run PostgreSQL refuses aside as a dead letter after bounded tries, visible in the API and a metric, while the runs due with it are archived', async () => {
    // This archiver alone, so that its tries and its metric are the ones counted.
    await archiver?.close();
    archiver = undefined;
    const registry = new Registry();
    const strict = await startArchiver({
      redis: h.producer,
      keys: h.keys,
      databaseUrl: db.url,
      logger: createLogger('archiver-test', { level: 'silent' }),
      registry,
      archivedRunRetentionS: 1,
      retentionDays: 30,
      batchSize: 50,
      visibilityTimeoutMs: 2000,
      pollMs: 20,
      sampleMs: 50,
      maxTries: 3,
      retryBaseMs: 20,
    });
    extraArchivers.push(strict);
    // A final record whose creation time no bigint holds: PostgreSQL refuses its row, whatever the batch.
    const poison = `run_poison_${Date.now()}`;
    const now = Date.now();
    await h.producer
      .multi()
      .hset(h.keys.runMeta(poison), {
        runId: poison,
        agent: 'test_agent',
        status: 'succeeded',
        createdAt: '1e30',
        updatedAt: String(now),
        final: '1',
        tenant: 'default',
      })
      .set(h.keys.runState(poison), '{}')
      .expire(h.keys.runMeta(poison), 600)
      .expire(h.keys.runState(poison), 600)
      .exec();
    const outbox = new Outbox(h.producer, h.keys);
    await outbox.add(poison, now);
    const plain = await Promise.all(
      [1, 2, 3].map((i) => startRun({ agent: 'test_agent', input: `due ${i}` })),
    );
    await waitFor(async () => (await outbox.deadLetters(poison)).length === 1, 20_000, 'the dead letter');
    await waitFor(async () => (await archived(plain)).length === 3, 20_000, 'the other runs to be archived');
    expect(await outbox.size()).toBe(0);
    const [letter] = await outbox.deadLetters(poison);
    expect(letter).toMatchObject({ runId: poison, tries: 3 });
    expect(letter!.error).toMatch(/bigint/);
    // Redis keeps the run set aside: its keys lost their TTL.
    expect(await h.producer.ttl(h.keys.runMeta(poison))).toBe(-1);
    const listed = await call('GET', '/v1/archive/dead-letters', { key: FULL_KEY });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.dead_letters).toContainEqual(
      expect.objectContaining({ run_id: poison, agent: 'test_agent', tries: 3, status: 'succeeded' }),
    );
    const dead = await registry.getSingleMetric('agent_reach_archive_dead_lettered_total')?.get();
    expect(dead?.values[0]?.value).toBe(1);
  });

  it('answers live reads from Redis while the archive table is locked, and an archived read 503 naming PostgreSQL with Retry-After', async () => {
    const gone = await startRun({ agent: 'test_agent', input: 'to the archive' });
    await archiveAll();
    await goneFromRedis([gone]);
    const locker = createPool(db.url, { max: 1, applicationName: 'archive-edges-lock' });
    const client = await locker.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE archived_runs IN ACCESS EXCLUSIVE MODE');
    try {
      const live = await startRun({ agent: 'test_agent', input: 'live while locked' });
      const read = await call('GET', `/v1/runs/${live}`);
      expect(read.status, read.text).toBe(200);
      expect(read.json.status).toBe('succeeded');
      const events = await call('GET', `/v1/runs/${live}/events`);
      expect(events.status).toBe(200);
      expect(events.text).toContain('run_finished');
      const old = await call('GET', `/v1/runs/${gone}`);
      expect(old.status, old.text).toBe(503);
      expect(old.json.error.code).toBe('UNAVAILABLE');
      expect(old.json.error.message).toContain('PostgreSQL');
      expect(old.json.error.message).not.toContain('Redis');
      expect(old.headers.get('retry-after')).toBe('5');
    } finally {
      await client.query('ROLLBACK');
      client.release();
      await locker.end();
    }
    expect((await call('GET', `/v1/runs/${gone}`)).status).toBe(200);
  });
});
