import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, Outbox, type Archiver } from '@agent-reach/archive';
import { RunControl } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import {
  FULL_KEY,
  LIMITED_KEY,
  startApiHarness,
  request,
  TEST_MODELS,
  type ApiHarness,
} from './helpers/api.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { waitFor } from './helpers/redis.js';
import { startTestArchiver, testDatabase } from './helpers/postgres.js';

const DESK_A = 'desk-a-key-0123456789abcdef';
const DESK_B = 'desk-b-key-0123456789abcdef';
const KEYS = [
  { key: FULL_KEY, name: 'tester' },
  { key: LIMITED_KEY, name: 'weather-desk', agents: ['weather_only'] },
  { key: DESK_A, name: 'desk-a', agents: ['test_agent'] },
  { key: DESK_B, name: 'desk-b', agents: ['test_agent'] },
  { key: 'acme-key-0123456789abcdef', name: 'acme', tenants: ['acme'] },
];

describe('run archive: finished runs read back from PostgreSQL through the API, with the same access rules (real Redis, PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let h: ApiHarness;
  let archive: OpenedRunArchive;
  let url: string;
  let closeServer: () => Promise<void>;
  let archiver: Archiver | undefined;
  const call = (method: string, path: string, init?: Parameters<typeof request>[3]) =>
    request(url, method, path, init);

  beforeAll(async () => {
    db = await testDatabase();
    await migrate(db.url);
    // A low compaction threshold, so that the run of six large results has tool messages folded away.
    const env = { DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '1', COMPACTION_THRESHOLD_TOKENS: '1500' };
    h = await startApiHarness({ apiKeys: KEYS }, env);
    addCommonScenarios(h.sim);
    h.sim.addScenario({
      name: 'six-large-results',
      turns: [
        ...Array.from({ length: 6 }, (_, i) => ({
          tool_calls: [{ name: 'big_result', arguments: { items: 50 + i } }],
        })),
        { content: 'six fetched' },
      ],
    });
    // The API's run control reads the archive, as a scheduler's does with DATABASE_URL.
    archive = openRunArchive(h.config, h.producer, h.keys)!;
    const control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    const server = await h.extraServer(
      { apiKeys: KEYS, allowedModels: [...TEST_MODELS, 'six-large-results'] },
      { control },
    );
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

  const startRun = async (key: string, body: Record<string, unknown>, path = '/v1/runs') => {
    const res = await call('POST', path, { key, body });
    expect(res.status, res.text).toBe(201);
    const runId = res.json.run_id as string;
    await waitFor(async () => (await call('GET', `/v1/runs/${runId}`)).json.status === 'succeeded', 15_000);
    return runId;
  };
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
  const listAll = async (key: string, query: string) => {
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const res = await call('GET', `/v1/runs?${query}${cursor ? `&cursor=${cursor}` : ''}`, { key });
      expect(res.status, res.text).toBe(200);
      ids.push(...res.json.runs.map((r: { run_id: string }) => r.run_id));
      cursor = res.json.next_cursor;
      if (!cursor) break;
    }
    return ids;
  };

  let weatherRun: string;
  let sessionRun: string;
  const paged: string[] = [];
  let firstPage: string[] = [];
  let firstCursor = '';

  it('reads an archived run back field by field as the API showed it live: record, steps with results, turns and events', async () => {
    weatherRun = await startRun(FULL_KEY, {
      agent: 'test_agent',
      input: 'weather?',
      model: 'weather-then-answer',
      metadata: { team: 'ops' },
    });
    expect(
      (await call('POST', '/v1/sessions', { key: DESK_A, body: { session_id: 'desk-a-archived' } })).status,
    ).toBe(201);
    sessionRun = await startRun(
      DESK_A,
      { agent: 'test_agent', input: 'the vault code is 4711' },
      '/v1/sessions/desk-a-archived/messages',
    );
    for (let i = 0; i < 4; i++)
      paged.push(
        await startRun(FULL_KEY, { agent: 'test_agent', input: `page ${i}`, metadata: { batch: 'paging' } }),
      );
    paged.push(
      await startRun(LIMITED_KEY, {
        agent: 'weather_only',
        input: 'weather?',
        model: 'weather-then-answer',
        metadata: { batch: 'paging' },
      }),
    );
    const live = await call('GET', `/v1/runs/${weatherRun}`);
    expect(live.json.steps[0]).toMatchObject({ tool: 'query_weather', ok: true });
    expect(live.json.steps[0].result).toBeDefined();
    expect(live.json.turns.length).toBeGreaterThan(0);
    const liveEvents = await h.control.events(weatherRun);
    // A listing page read while every run is live: the rest is paged after they moved to the archive.
    const page = await call('GET', '/v1/runs?metadata=batch=paging&limit=2');
    firstPage = page.json.runs.map((r: { run_id: string }) => r.run_id);
    firstCursor = page.json.next_cursor;
    expect(firstPage).toHaveLength(2);

    await archiveAll();
    await goneFromRedis([weatherRun, sessionRun, ...paged]);
    const row = await db.pool.query(
      'SELECT agent, status, tools, metadata FROM archived_runs WHERE run_id = $1',
      [weatherRun],
    );
    expect(row.rows).toEqual([
      { agent: 'test_agent', status: 'succeeded', tools: ['query_weather'], metadata: { team: 'ops' } },
    ]);

    const archived = await call('GET', `/v1/runs/${weatherRun}`);
    expect(archived.status).toBe(200);
    expect(archived.json).toEqual(live.json);
    const control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    expect(await control.events(weatherRun)).toEqual(liveEvents);
    expect(await control.events(weatherRun, liveEvents[1]!.id)).toEqual(liveEvents.slice(2));
  });

  it('pages one cursor across runs that moved from Redis to the archive between two pages: none skipped, none twice', async () => {
    const ids = [...firstPage];
    let cursor: string | undefined = firstCursor;
    while (cursor) {
      const res = await call('GET', `/v1/runs?metadata=batch=paging&limit=2&cursor=${cursor}`);
      expect(res.status, res.text).toBe(200);
      ids.push(...res.json.runs.map((r: { run_id: string }) => r.run_id));
      cursor = res.json.next_cursor;
    }
    expect(ids).toEqual([...paged].reverse());
    // The whole listing, newest first, from the archive alone now.
    expect(await listAll(FULL_KEY, 'metadata=batch=paging&limit=3')).toEqual([...paged].reverse());
  });

  it('holds limited keys, tenants and session privacy on archived runs as on live ones', async () => {
    // A key limited to weather_only: 403 on another agent's archived run, its own agent's listed only.
    expect((await call('GET', `/v1/runs/${weatherRun}`, { key: LIMITED_KEY })).status).toBe(403);
    expect(await listAll(LIMITED_KEY, 'limit=10')).toEqual([paged[4]]);
    expect((await call('GET', `/v1/runs/${paged[4]}`, { key: LIMITED_KEY })).status).toBe(200);
    // The session's run: its owner reads it; another key limited to the same agent gets a missing run.
    expect((await call('GET', `/v1/runs/${sessionRun}`, { key: DESK_A })).json.input).toContain('4711');
    const other = await call('GET', `/v1/runs/${sessionRun}`, { key: DESK_B });
    expect(other.status).toBe(404);
    expect(other.text).not.toContain('4711');
    expect(await listAll(DESK_B, 'limit=50')).not.toContain(sessionRun);
    expect(await listAll(DESK_A, 'limit=50')).toContain(sessionRun);
    // Another tenant's key: the archived runs of `default` are missing, and none is listed.
    const acme = 'acme-key-0123456789abcdef';
    expect((await call('GET', `/v1/runs/${weatherRun}`, { key: acme })).status).toBe(404);
    expect(await listAll(acme, 'limit=50')).toEqual([]);
  });

  it('finds archived runs by each filter the API offers', async () => {
    const found = async (query: string) => listAll(FULL_KEY, `${query}&limit=20`);
    expect(await found('tool=query_weather')).toEqual([paged[4], weatherRun]);
    expect(await found('agent=weather_only')).toEqual([paged[4]]);
    expect(await found('metadata=team=ops')).toEqual([weatherRun]);
    const trace = (await call('GET', `/v1/runs/${weatherRun}`)).json.trace_id as string;
    expect(await found(`trace_id=${trace}`)).toEqual([weatherRun]);
    expect(await found('status=failed')).toEqual([]);
    expect((await found('status=succeeded')).length).toBe(7);
  });

  it('refuses an offset with a 400 naming the cursor, and offers only next_cursor, while the archive is on', async () => {
    const refused = await call('GET', '/v1/runs?offset=2&limit=2');
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('VALIDATION_FAILED');
    expect(refused.json.error.message).toContain('cursor');
    const first = await call('GET', '/v1/runs?limit=2');
    expect(first.status).toBe(200);
    expect(first.json.next_cursor).toEqual(expect.any(String));
    expect(first.json).not.toHaveProperty('next_offset');
  });

  it('reads back the result of a call whose tool message compaction folded away, from the archived results', async () => {
    const runId = await startRun(FULL_KEY, {
      agent: 'test_agent',
      input: 'fetch six batches of rows',
      model: 'six-large-results',
    });
    // The premise: some call's result is no longer among the run's tool messages, only in its results hash.
    const messages = (await h.producer.lrange(h.keys.runMessages(runId), 0, -1)).map(
      (m) => JSON.parse(m) as { role: string; tool_call_id?: string },
    );
    const kept = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
    const folded = Object.keys(await h.producer.hgetall(h.keys.results(runId))).filter((id) => !kept.has(id));
    expect(folded.length).toBeGreaterThan(0);
    const liveEvents = await h.control.events(runId);
    const liveResults = liveEvents.flatMap(({ event: e }) => (e.type === 'tool_result' ? [e] : []));
    expect(liveResults).toHaveLength(6);
    for (const e of liveResults) expect(e.result).toBeDefined();

    await archiveAll();
    await goneFromRedis([runId]);
    const control = new RunControl(
      h.producer,
      h.keys,
      new RunStore(h.producer, h.keys, { archive }),
      archive.store,
    );
    expect(await control.events(runId)).toEqual(liveEvents);
  });
});
