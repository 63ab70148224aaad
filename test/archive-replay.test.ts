import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, Outbox, runKeys, type Archiver } from '@agent-reach/archive';
import { replayRun } from '@agent-reach/scheduler';
import { openRunArchive, RunStore, type OpenedRunArchive } from '@agent-reach/scheduler/internal';
import { runCli } from './helpers/cli.js';
import { startTestArchiver, testDatabase } from './helpers/postgres.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { addCommonScenarios } from './helpers/scenarios.js';

/**
 * A finished run whose Redis keys are all gone (archived, then let go by Redis) is still shown, listed
 * as events and replayed, by the CLI and by replay in process, from the archive alone.
 */
describe(
  'an archived run whose Redis keys are gone: the CLI shows it, prints its events and replays it; replay reads its recording from the archive (real Redis, PostgreSQL, CLI processes)',
  {
    timeout: 120_000,
  },
  () => {
    let db: Awaited<ReturnType<typeof testDatabase>>;
    let h: Awaited<ReturnType<typeof startRunsHarness>>;
    let archive: OpenedRunArchive;
    let archiver: Archiver;
    let runId: string;
    const live: { show: string; events: string } = { show: '', events: '' };
    const cli = (...args: string[]) => runCli({ ...testEnv(h.prefix, h.sim), DATABASE_URL: db.url }, args);

    beforeAll(async () => {
      db = await testDatabase();
      await migrate(db.url);
      h = await startRunsHarness({ DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '1' });
      addCommonScenarios(h.sim);
      archive = openRunArchive(h.config, h.producer, h.keys)!;
      runId = await h.control.start({ agent: 'test_agent', input: 'weather?', model: 'weather-then-answer' });
      expect((await h.control.wait(runId, 20_000)).status).toBe('succeeded');
      // What the CLI printed while the run was live, to compare with what it prints from the archive.
      const [show, events] = [await cli('runs', 'show', runId), await cli('runs', 'events', runId)];
      expect(show.code, show.stderr).toBe(0);
      expect(events.code, events.stderr).toBe(0);
      live.show = show.stdout;
      live.events = events.stdout;

      archiver = await startTestArchiver({
        redis: h.producer,
        keys: h.keys,
        databaseUrl: db.url,
        batchSize: 10,
      });
      const outbox = new Outbox(h.producer, h.keys);
      await waitFor(async () => (await outbox.size()) === 0, 15_000, 'the outbox to drain');
      await waitFor(
        async () => (await h.producer.exists(...runKeys(h.keys, runId))) === 0,
        15_000,
        'every Redis key of the run to expire',
      );
    }, 120_000); // two CLI processes, each loading the platform
    afterAll(async () => {
      await archiver?.close();
      await archive?.close();
      await h?.close();
      await db?.drop();
    });

    it('shows the archived run as it did while the run was live, and prints the same events', async () => {
      const show = await cli('runs', 'show', runId);
      expect(show.code, show.stderr).toBe(0);
      expect(show.stdout).toBe(live.show);
      expect(show.stdout).toMatch(/run finished: succeeded \(final_answer\)/);
      const events = await cli('runs', 'events', runId);
      expect(events.code, events.stderr).toBe(0);
      // The same events, field by field (jsonb keeps no key order: keys may print in another order).
      const parse = (out: string) =>
        out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { type: string });
      expect(parse(events.stdout)).toEqual(parse(live.events));
      expect(parse(events.stdout).map((e) => e.type)).toContain('tool_result');
    });

    it('replays the archived run from the command line, every call answered from the archived recording', async () => {
      const replay = await cli('runs', 'replay', runId);
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toMatch(
        new RegExp(`replayed ${runId} as ${runId}\\.replay-\\d+: succeeded \\(final_answer\\)`),
      );
      expect(replay.stdout).toMatch(/tool calls answered from the recording: 1 \(nothing was executed\)/);
      expect(replay.stdout).toMatch(/every tool call had the same outcome as recorded/);
    });

    it('replays the archived run in process with the recorded result of its call', async () => {
      const store = new RunStore(h.producer, h.keys, { archive });
      const result = await replayRun(runId, { runner: h.schedulers[0]!.runner, store });
      expect(result.outcome).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
      expect(result.calls.map((c) => [c.tool, c.source])).toEqual([['query_weather', 'recorded']]);
      expect(result.differences).toEqual([]);
    });
  },
);
