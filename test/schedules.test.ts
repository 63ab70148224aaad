import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { createLogger, loadConfig, type AgentReachConfig } from '@agent-reach/shared';
import testTools from './helpers/test-tools.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { testEnv } from './helpers/runs.js';
import { runCli } from './helpers/cli.js';
import { startSchedulerChild, type Child } from './helpers/processes.js';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const KEY = `sch-${randomUUID().replace(/-/g, '')}`;
const LIMITED = `lim-${randomUUID().replace(/-/g, '')}`;
const OTHER_TENANT = `acm-${randomUUID().replace(/-/g, '')}`;

type Json = Record<string, any>;
interface Firing {
  scheduled_at: number;
  fired_at: number;
  outcome: string;
  run_id?: string;
}

// llm-sim, an executor and two schedulers in this process, both serving the API and firing schedules.
describe(
  'schedules: runs started by cron or interval, once per firing across schedulers',
  { timeout: 180_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let executor: ExecutorProcess;
    let config: AgentReachConfig;
    let env: Record<string, string>;
    let dir: string;
    const schedulers: Array<SchedulerProcess | undefined> = [undefined, undefined];
    const logger = createLogger('test', { level: 'silent' });

    const base = () => String(schedulers.find((s) => s)?.apiUrl);
    const call = async (method: string, path: string, body?: unknown, key = KEY) => {
      const res = await fetch(`${base()}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, json: (text ? JSON.parse(text) : {}) as Json };
    };
    const create = async (body: Json) => {
      const res = await call('POST', '/v1/schedules', { agent: 'test_agent', ...body });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json.schedule_id as string;
    };
    const firingsOf = async (id: string) => {
      const res = await call('GET', `/v1/schedules/${id}`);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return res.json.firings as Firing[];
    };
    const started = (firings: Firing[]) => firings.filter((f) => f.outcome === 'started');
    const waitFirings = (id: string, check: (f: Firing[]) => boolean, what: string) =>
      waitFor(
        async () => {
          const f = await firingsOf(id);
          return check(f) ? f : undefined;
        },
        90_000,
        what,
      );
    const startSchedulerAt = async (i: number) => {
      schedulers[i] = await startScheduler(config, { logger });
    };
    /** No slot fired twice, no run started for two slots. */
    const expectOncePerSlot = (firings: Firing[]) => {
      const slots = firings.map((f) => f.scheduled_at);
      expect(new Set(slots).size).toBe(slots.length);
      const runs = started(firings).map((f) => f.run_id);
      expect(new Set(runs).size).toBe(runs.length);
    };
    /** Each firing stands for a slot of the interval: whole intervals from the first. */
    const onSlots = (firings: Firing[], everyMs: number) => {
      const first = Math.min(...firings.map((f) => f.scheduled_at));
      return firings.every((f) => (f.scheduled_at - first) % everyMs === 0);
    };
    /** Every slot from the first firing to the last fired: none passed over. */
    const everySlot = (firings: Firing[], everyMs: number) => {
      const slots = [...new Set(firings.map((f) => f.scheduled_at))].sort((a, b) => a - b);
      return onSlots(firings, everyMs) && slots.every((x, i) => i === 0 || x - slots[i - 1]! === everyMs);
    };

    beforeAll(async () => {
      t = testRedis();
      sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
      addCommonScenarios(sim);
      dir = await mkdtemp(path.join(tmpdir(), 'schedules-'));
      const workflowsFile = path.join(dir, 'workflows.yaml');
      await writeFile(
        workflowsFile,
        'workflows: [{ name: solo, nodes: [{ id: only, agent: test_agent }] }]\n',
      );
      env = testEnv(t.prefix, sim, {
        WORKFLOWS_FILE: workflowsFile,
        API_KEYS: `test:${KEY},limited:${LIMITED}:weather_only,acme:${OTHER_TENANT}:*:acme`,
        API_PORT: '0',
        API_HOST: '127.0.0.1',
        ALLOWED_MODELS: 'echo,approval',
        // The waits poll the API every 25 ms: over the default 600 requests a minute, a long wait would be
        // answered 429 and read as a schedule without firings.
        API_RATE_LIMIT_PER_MINUTE: '1000000',
      });
      config = loadConfig(env);
      executor = await startExecutor(config, { extraTools: testTools, logger });
      await startSchedulerAt(0);
      await startSchedulerAt(1);
    }, 120_000);
    afterAll(async () => {
      for (const s of schedulers) await s?.close();
      await executor?.close();
      await sim?.close();
      await rm(dir, { recursive: true, force: true });
      await t?.cleanup();
    });

    it('refuses a bad cron expression and an unknown time zone with a 400 naming the field', async () => {
      const refusal = async (timing: Json, ...named: string[]) => {
        const res = await call('POST', '/v1/schedules', { agent: 'test_agent', input: 'x', ...timing });
        expect(res.status).toBe(400);
        expect(res.json.error.code).toBe('VALIDATION_FAILED');
        for (const name of named) expect(res.json.error.message).toContain(name);
      };
      await refusal({ cron: 'every morning' }, '/cron', 'every morning');
      await refusal({ cron: '0 8 * * *', timezone: 'Mars/Olympus' }, '/timezone', 'Mars/Olympus');
      await refusal({ every_ms: 10 }, '/every_ms');
      const neither = await call('POST', '/v1/schedules', { agent: 'test_agent', input: 'x' });
      expect(neither.status).toBe(400);
    });

    it('lets a key schedule only agents it may run, and shows each tenant only its schedules', async () => {
      const refused = await call(
        'POST',
        '/v1/schedules',
        { agent: 'test_agent', input: 'x', every_ms: 60_000 },
        LIMITED,
      );
      expect(refused.status).toBe(403);
      const id = await create({ input: 'tenant check', cron: '0 8 * * *', timezone: 'Europe/Berlin' });
      const mine = await call('GET', '/v1/schedules');
      expect(mine.json.schedules.map((s: Json) => s.schedule_id)).toContain(id);
      const theirs = await call('GET', '/v1/schedules', undefined, OTHER_TENANT);
      expect(theirs.json.schedules.map((s: Json) => s.schedule_id)).not.toContain(id);
      expect((await call('GET', `/v1/schedules/${id}`, undefined, OTHER_TENANT)).status).toBe(404);
      // The next 08:00 in Berlin, as the job scheduler computed it.
      const view = (await call('GET', `/v1/schedules/${id}`)).json;
      const next = new Date(view.next_firing_at as number);
      const berlin = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'Europe/Berlin',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }).format(next);
      expect(berlin).toBe('08:00');
      expect((await call('DELETE', `/v1/schedules/${id}`)).status).toBe(204);
      expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(404);
    });

    it('fires an interval schedule once per slot across two schedulers and a restart of one, each firing an ordinary run linked to it', async () => {
      const id = await create({
        input: 'report for {{scheduled_at}}',
        every_ms: 1_000,
        overlap: 'allow_all',
        metadata: { team: 'ops' },
      });
      const before = await waitFirings(id, (f) => started(f).length >= 3, 'three firings');
      expectOncePerSlot(before);
      await schedulers[0]?.close();
      schedulers[0] = undefined;
      const during = await waitFirings(
        id,
        (f) => started(f).length >= before.length + 2,
        'two firings with one scheduler',
      );
      expectOncePerSlot(during);
      await startSchedulerAt(0);
      const after = await waitFirings(
        id,
        (f) => started(f).length >= during.length + 3,
        'three firings after the restart',
      );
      expectOncePerSlot(after);
      // A firing's time is its slot, not the time the previous firing was taken.
      expect(onSlots(after, 1_000), JSON.stringify(after)).toBe(true);
      await call('POST', `/v1/schedules/${id}/pause`);
      // Each run is an ordinary run: its metadata links it to the schedule, its input carries its slot.
      const firing = started(after)[0] as Firing;
      const run = (await call('GET', `/v1/runs/${firing.run_id}`)).json;
      expect(run.metadata).toMatchObject({ schedule_id: id, team: 'ops' });
      expect(run.input).toBe(`report for ${new Date(firing.scheduled_at).toISOString()}`);
      await waitFor(
        async () => (await call('GET', `/v1/runs/${firing.run_id}`)).json.status === 'succeeded',
        60_000,
      );
    });

    it('pauses, resumes and triggers a schedule by hand; a trigger fires even a paused one', async () => {
      const id = await create({ input: 'by hand', cron: '0 0 1 1 *' });
      const paused = await call('POST', `/v1/schedules/${id}/pause`);
      expect(paused.json.paused).toBe(true);
      expect(paused.json.next_firing_at).toBeUndefined();
      expect((await call('POST', `/v1/schedules/${id}/trigger`)).status).toBe(202);
      const fired = await waitFirings(id, (f) => started(f).length === 1, 'the triggered firing');
      expect(fired[0]?.run_id).toMatch(/^run_/);
      const resumed = await call('POST', `/v1/schedules/${id}/resume`);
      expect(resumed.json.paused).toBe(false);
      expect(resumed.json.next_firing_at).toBeGreaterThan(Date.now());
      await call('DELETE', `/v1/schedules/${id}`);
    });

    it('creates, lists, triggers, pauses and deletes schedules from the CLI, refusing a bad cron with exit 2', async () => {
      const bad = await runCli(env, [
        'schedules',
        'create',
        '--agent',
        'test_agent',
        '--input',
        'x',
        '--cron',
        '61 * * * *',
      ]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--cron');
      const made = await runCli(env, [
        'schedules',
        'create',
        '--agent',
        'test_agent',
        '--input',
        'from the CLI at {{scheduled_at}}',
        '--cron',
        '30 6 * * 1-5',
        '--timezone',
        'America/New_York',
      ]);
      expect(made.code, made.stderr).toBe(0);
      const id = String(JSON.parse(made.stdout).schedule_id);
      const listed = await runCli(env, ['schedules', 'ls']);
      expect(listed.stdout).toContain(id);
      // The API sees it as the key's, and a scheduler fires it when triggered.
      expect((await call('GET', `/v1/schedules/${id}`)).json.timezone).toBe('America/New_York');
      expect((await runCli(env, ['schedules', 'trigger', id])).code).toBe(0);
      const fired = await waitFirings(id, (f) => started(f).length === 1, 'the CLI-triggered firing');
      expect(fired[0]?.run_id).toMatch(/^run_/);
      const paused = await runCli(env, ['schedules', 'pause', id]);
      expect(JSON.parse(paused.stdout).paused).toBe(true);
      expect((await runCli(env, ['schedules', 'delete', id])).code).toBe(0);
      expect((await runCli(env, ['schedules', 'show', id])).code).toBe(3);
    });

    it.skipIf(!existsSync(CHROMIUM))(
      "lists schedules in the inspector with their timing, next firing and last firing's run",
      async () => {
        const id = await create({ input: 'for the inspector', cron: '15 9 * * *', timezone: 'Asia/Tokyo' });
        await call('POST', `/v1/schedules/${id}/trigger`);
        const [firing] = await waitFirings(id, (f) => started(f).length === 1, 'the triggered firing');
        // The bundle from the sources, as the inspector's own test builds it.
        await (buildUi as () => Promise<void>)();
        const browser = await chromium.launch({
          executablePath: CHROMIUM,
          headless: true,
          args: ['--no-sandbox'],
        });
        try {
          const page = await browser.newPage();
          page.setDefaultTimeout(15_000);
          await page.goto(`${base()}/ui`);
          await page.getByLabel('API key').fill(KEY);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.getByRole('link', { name: 'Schedules' }).click();
          const row = page.locator('table.schedules tbody tr', { hasText: id });
          await row.waitFor();
          expect(await row.innerText()).toContain('15 9 * * * (Asia/Tokyo)');
          expect(await row.locator('time').first().getAttribute('datetime')).toMatch(/T00:15:00/);
          await row.getByRole('link', { name: String(firing?.run_id) }).click();
          await page.waitForURL(/#\/runs\/run_/);
        } finally {
          await browser.close();
          await call('DELETE', `/v1/schedules/${id}`);
        }
      },
    );

    it('starts a workflow of the workflows file at each firing of a workflow schedule', async () => {
      const both = await call('POST', '/v1/schedules', {
        agent: 'test_agent',
        workflow: 'solo',
        input: 'x',
        every_ms: 60_000,
      });
      expect(both.status).toBe(400);
      expect(both.json.error.message).toContain('/workflow');
      const unknown = await call('POST', '/v1/schedules', { workflow: 'nope', input: 'x', every_ms: 60_000 });
      expect(unknown.json.error.code).toBe('UNKNOWN_WORKFLOW');
      const id = await create({
        agent: undefined,
        workflow: 'solo',
        input: 'weekly {{scheduled_at}}',
        cron: '0 9 * * 1',
      });
      expect((await call('POST', `/v1/schedules/${id}/trigger`)).status).toBe(202);
      const [firing] = await waitFirings(
        id,
        (f) => f.some((x) => x.outcome === 'started'),
        'the workflow firing',
      );
      const workflowId = String((firing as Firing & { workflow_id?: string }).workflow_id);
      expect(workflowId).toMatch(/^wf_/);
      const workflow = (await call('GET', `/v1/workflows/${workflowId}`)).json;
      expect(workflow.metadata).toMatchObject({ schedule_id: id });
      expect(workflow.input).toBe(`weekly ${new Date(Number(firing?.scheduled_at)).toISOString()}`);
      await waitFor(
        async () => (await call('GET', `/v1/workflows/${workflowId}`)).json.finished_at !== undefined,
        60_000,
      );
      await call('DELETE', `/v1/schedules/${id}`);
    });

    it('skips a firing while the last run goes on (skip), waits with one (buffer_one), or starts it anyway (allow_all)', async () => {
      const waiting = { input: 'needs a person', model: 'approval', every_ms: 1_000 };
      const skip = await create({ ...waiting, overlap: 'skip' });
      const buffer = await create({ ...waiting, overlap: 'buffer_one' });
      const all = await create({ ...waiting, overlap: 'allow_all' });
      const skipped = await waitFirings(
        skip,
        (f) => started(f).length === 1 && f.filter((x) => x.outcome === 'skipped_overlap').length >= 2,
        'skipped firings',
      );
      expect(started(skipped)).toHaveLength(1);
      // Counted on the /metrics of the scheduler that took the firing.
      const texts = await Promise.all(schedulers.map((s) => s?.metricsRegistry.metrics() ?? ''));
      expect(texts.join('\n')).toMatch(
        /^agent_reach_schedule_firings_total\{outcome="skipped_overlap"\} [1-9]/m,
      );
      await waitFirings(all, (f) => started(f).length >= 3, 'overlapping runs');
      // buffer_one: firings while the first run waits are skipped but one, which starts once the first ends.
      const first = await waitFirings(
        buffer,
        (f) => started(f).length === 1 && f.some((x) => x.outcome === 'skipped_overlap'),
        'a firing skipped beside the buffered one',
      );
      const firstRun = String(started(first)[0]?.run_id);
      expect((await call('POST', `/v1/runs/${firstRun}/cancel`)).status).toBe(202);
      const next = await waitFirings(buffer, (f) => started(f).length === 2, 'the buffered firing');
      const buffered = started(next)[0] as Firing;
      // It is the slot that came while the first run went on, not a later one.
      const skippedSlots = next.filter((x) => x.outcome === 'skipped_overlap').map((x) => x.scheduled_at);
      expect(buffered.scheduled_at).toBeLessThan(Math.max(...skippedSlots));
      for (const id of [skip, buffer, all]) await call('POST', `/v1/schedules/${id}/pause`);
    });

    it('after a downtime, starts the missed firings within the catch-up window, each slot once, and skips the ones beyond it', async () => {
      const inside = await create({ input: 'catch up', every_ms: 2_000, overlap: 'allow_all' });
      const beyond = await create({
        input: 'too late',
        every_ms: 2_000,
        overlap: 'allow_all',
        catchup_window_ms: 1_500,
      });
      await waitFirings(inside, (f) => started(f).length >= 1, 'a firing before the downtime');
      await waitFirings(beyond, (f) => started(f).length >= 1, 'a firing before the downtime');
      const view = (await call('GET', `/v1/schedules/${beyond}`)).json;
      for (const [i, s] of schedulers.entries()) {
        await s?.close();
        schedulers[i] = undefined;
      }
      // Down until the slot due next is later than the short window.
      const due = Number(view.next_firing_at) + 2_000 + 1_500;
      await waitFor(() => Date.now() > due, 30_000, 'the downtime');
      await startSchedulerAt(0);
      await waitFirings(
        beyond,
        (f) => f.some((x) => x.outcome === 'skipped_late'),
        'the late firing skipped',
      );
      // The slots of the downtime within the window start late, each once; none is passed over.
      const late = await waitFirings(
        inside,
        (f) => started(f).some((x) => x.scheduled_at > due) && everySlot(f, 2_000),
        'every slot of the downtime started',
      );
      expect(started(late).some((x) => x.fired_at - x.scheduled_at > 1_500)).toBe(true);
      expectOncePerSlot(late);
      await startSchedulerAt(1);
      for (const id of [inside, beyond]) await call('POST', `/v1/schedules/${id}/pause`);
    });
  },
);

// Two scheduler processes; one is killed (SIGKILL) while an interval schedule fires every second, and a
// new one started: no slot is lost for good or fired twice, and no run is started twice.
describe('schedules across scheduler processes, one killed mid-firing', { timeout: 180_000 }, () => {
  let t: ReturnType<typeof testRedis>;
  let sim: LlmSim;
  let executor: ExecutorProcess;
  let env: Record<string, string>;
  const children: Child[] = [];
  const start = async () => {
    const child = startSchedulerChild(env);
    children.push(child);
    return String((await child.ready).apiUrl);
  };

  beforeAll(async () => {
    t = testRedis();
    sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
    env = testEnv(t.prefix, sim, {
      API_KEYS: `test:${KEY}`,
      API_PORT: '0',
      API_HOST: '127.0.0.1',
      // The waits poll the API every 25 ms: over the default 600 requests a minute, a long wait (a loaded
      // machine) was answered 429, and the runs listing read without its runs.
      API_RATE_LIMIT_PER_MINUTE: '1000000',
      // A killed scheduler's firing job is taken again within seconds.
      RUN_LOCK_DURATION_MS: '3000',
      RUN_STALLED_INTERVAL_MS: '1000',
    });
    executor = await startExecutor(loadConfig(env), {
      extraTools: testTools,
      logger: createLogger('test', { level: 'silent' }),
    });
  }, 120_000);
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await executor?.close();
    await sim?.close();
    await t?.cleanup();
  });

  it('fires every slot once while a scheduler process is killed and another started', async () => {
    const [doomedUrl, survivorUrl] = await Promise.all([start(), start()]);
    // A busy machine may answer 503 (a Redis command past the API's timeout): asked again after
    // Retry-After, as a client would. Any other error fails the test naming the request and the answer,
    // instead of reading a field the error lacks.
    const call = async (base: string, method: string, path: string, body?: unknown): Promise<Json> => {
      for (let tries = 1; ; tries += 1) {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${KEY}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        if (res.ok) return (text ? JSON.parse(text) : {}) as Json;
        if (res.status !== 503 || tries >= 10)
          throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
        const after = Number(res.headers.get('retry-after') ?? '1');
        await new Promise((r) => setTimeout(r, Math.min(Number.isFinite(after) ? after : 1, 10) * 1000));
      }
    };
    const created = await call(doomedUrl, 'POST', '/v1/schedules', {
      agent: 'test_agent',
      input: 'tick {{scheduled_at}}',
      every_ms: 1_000,
      overlap: 'allow_all',
    });
    const id = String(created.schedule_id);
    const firings = (n: number, what: string) =>
      waitFor(
        async () => {
          const f = (await call(survivorUrl, 'GET', `/v1/schedules/${id}`)).firings as Firing[];
          return f.filter((x) => x.outcome === 'started').length >= n ? f : undefined;
        },
        90_000,
        what,
      );
    const before = await firings(3, 'three firings over two processes');
    const doomed = children[0] as Child;
    doomed.kill('SIGKILL');
    await doomed.exited;
    await firings(before.length + 3, 'three firings after the kill');
    await start();
    const after = await firings(before.length + 6, 'three firings with the new process');
    await call(survivorUrl, 'POST', `/v1/schedules/${id}/pause`);
    const slots = after.map((f) => f.scheduled_at);
    expect(new Set(slots).size).toBe(slots.length);
    // No run beyond one per recorded slot: once a firing in flight at the pause is recorded, the runs
    // linked to the schedule are exactly the firings' runs.
    const runsOf = async () => {
      const f = (await call(survivorUrl, 'GET', `/v1/schedules/${id}`)).firings as Firing[];
      return f.flatMap((x) => (x.run_id ? [x.run_id] : [])).sort();
    };
    const linked = async () =>
      ((await call(survivorUrl, 'GET', `/v1/runs?metadata=schedule_id=${id}&limit=200`)).runs as Json[])
        .map((r) => String(r.run_id))
        .sort();
    const settled = await waitFor(
      async () => {
        const [recorded, listed] = [await runsOf(), await linked()];
        return JSON.stringify(recorded) === JSON.stringify(listed) ? recorded : undefined;
      },
      30_000,
      "the schedule's runs to be its recorded firings' runs",
    );
    expect(new Set(settled).size).toBe(settled.length);
  });
});
