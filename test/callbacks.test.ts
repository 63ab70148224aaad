import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  generateWebhookSecret,
  verifyWebhook,
  WebhookVerificationError,
} from '@agent-reach/client';
import { enqueueRun } from '@agent-reach/client/queue';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { createLogger, loadConfig } from '@agent-reach/shared';
import testTools from './helpers/test-tools.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';
import { runCli } from './helpers/cli.js';

const API_KEY = `cb-${randomUUID().replace(/-/g, '')}`;
/** The secret of the API key `test`, and the one signing runs started through Redis (`*`). */
const SECRET = generateWebhookSecret();
const REDIS_SECRET = generateWebhookSecret();

/** One delivery as the receiver saw it. */
interface Received {
  id: string;
  type: string;
  runId: string;
  /** Verified with the client's helper: by the API key's secret, the secret of runs without a key, or neither. */
  signedWith: 'key' | 'redis' | 'none';
  /** The delivery as it came, for the helper's refusals. */
  raw: { headers: Record<string, string>; body: string };
}

/**
 * A real HTTP receiver: it verifies each delivery with the client's helper, answers 204, or 500 to the
 * first delivery of each id while `failFirst` holds; it can go down (its port closed) and come back.
 */
class Receiver {
  readonly received: Received[] = [];
  failFirst = false;
  #server: Server | undefined;
  #port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hook`;
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(this.#port, '127.0.0.1', resolve));
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  }

  of(runId: string, type?: string): Received[] {
    return this.received.filter((r) => r.runId === runId && (type === undefined || r.type === type));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const id = String(req.headers['webhook-id'] ?? '');
    const raw = {
      headers: Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [
          h,
          String(req.headers[h] ?? ''),
        ]),
      ),
      body,
    };
    const verified = (
      [
        ['key', SECRET],
        ['redis', REDIS_SECRET],
      ] as const
    ).flatMap(([signedWith, secret]) => {
      try {
        return [{ signedWith, event: verifyWebhook(secret, req.headers, body) }];
      } catch {
        return [];
      }
    })[0];
    const entry: Received = {
      id,
      type: verified?.event.type ?? '',
      runId: String(verified?.event.data.run_id ?? ''),
      signedWith: verified?.signedWith ?? 'none',
      raw,
    };
    const repeat = this.received.some((r) => r.id === id);
    this.received.push(entry);
    res.writeHead(!verified ? 401 : this.failFirst && !repeat ? 500 : 204).end();
  }
}

// llm-sim over HTTP, an executor and a scheduler (serving the HTTP API and sending callbacks) in this
// process, a real receiver on 127.0.0.1 (allowed by CALLBACK_ALLOWED_HOSTS, as an operator would).
describe(
  'run callbacks, signed per Standard Webhooks and retried until the receiver takes them',
  { timeout: 120_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let executor: ExecutorProcess;
    let scheduler: SchedulerProcess;
    /** Starts another scheduler of the same fleet (serving the API and sending callbacks). */
    let startAnother: () => Promise<SchedulerProcess>;
    let base: string;
    let dir: string;
    const receiver = new Receiver();
    const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };

    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as Record<string, any> };
    };
    const getRun = async (runId: string) =>
      (await (await fetch(`${base}/v1/runs/${runId}`, { headers })).json()) as Record<string, any>;
    const deliveryOf = (runId: string, event: string, state: string) =>
      waitFor(
        async () => {
          const run = await getRun(runId);
          return (run.callback?.deliveries as Array<Record<string, any>> | undefined)?.find(
            (d) => d.event === event && d.state === state,
          );
        },
        60_000,
        `${event} of ${runId} to be ${state}`,
      );
    /** A run started through Redis, as a service without an API key starts one, with a callback. */
    const enqueueWithCallback = (url: string) =>
      enqueueRun({
        redisUrl: REDIS_URL,
        prefix: t.prefix,
        agent: 'test_agent',
        input: 'hi',
        callback: { url },
      });
    const counted = async (outcome: string) => {
      const text = await scheduler.metricsRegistry.metrics();
      const lines = text.split('\n').filter((l) => l.startsWith('agent_reach_callback_deliveries_total{'));
      return lines
        .filter((l) => l.includes(`outcome="${outcome}"`))
        .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    };

    beforeAll(async () => {
      t = testRedis();
      dir = await mkdtemp(path.join(tmpdir(), 'callbacks-'));
      const workflowsFile = path.join(dir, 'workflows.yaml');
      await writeFile(
        workflowsFile,
        [
          'workflows:',
          '  - name: solo',
          '    nodes:',
          '      - { id: only, agent: test_agent, model: echo }',
        ].join('\n'),
      );
      sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
      addCommonScenarios(sim);
      const env = testEnv(t.prefix, sim, {
        ...apiEnv(API_KEY),
        ALLOWED_MODELS: 'echo,approval',
        CALLBACK_SECRETS: `test=${SECRET},*=${REDIS_SECRET}`,
        CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
        CALLBACK_MAX_ATTEMPTS: '6',
        CALLBACK_BACKOFF_MS: '250',
        CALLBACK_TIMEOUT_MS: '2000',
        WORKFLOWS_FILE: workflowsFile,
      });
      const config = loadConfig(env);
      const logger = createLogger('test', { level: 'silent' });
      executor = await startExecutor(config, { extraTools: testTools, logger });
      scheduler = await startScheduler(config, { logger, env });
      startAnother = () => startScheduler(config, { logger, env });
      base = String(scheduler.apiUrl);
      await receiver.up();
    }, 120_000);
    afterAll(async () => {
      await scheduler?.close();
      await executor?.close();
      await sim?.close();
      await receiver.down();
      await rm(dir, { recursive: true, force: true });
      await t?.cleanup();
    });

    it('delivers run.finished to a receiver that was down when the run ended once it is back, signed, and records the attempts on the run', async () => {
      await receiver.down();
      const created = await post('/v1/runs', {
        agent: 'test_agent',
        input: 'hi',
        model: 'echo',
        callback: { url: receiver.url },
      });
      expect(created.status).toBe(201);
      const runId = String(created.json.run_id);
      // Attempts fail while the receiver is down: the delivery stays pending and is tried again.
      const failing = await waitFor(
        async () => {
          const d = (await getRun(runId)).callback?.deliveries?.[0];
          return d && d.attempts >= 2 ? d : undefined;
        },
        60_000,
        'two failed attempts',
      );
      expect(failing).toMatchObject({ event: 'run.finished', state: 'pending' });
      expect(failing.last_error).toMatch(/ECONNREFUSED/);
      await receiver.up();
      const delivered = await deliveryOf(runId, 'run.finished', 'delivered');
      expect(delivered).toMatchObject({ id: failing.id, last_status: 204 });
      expect(delivered.attempts).toBeGreaterThan(2);
      const got = receiver.of(runId);
      expect(got).toMatchObject([{ id: failing.id, type: 'run.finished', runId, signedWith: 'key' }]);
      expect(JSON.parse(got[0]!.raw.body)).toMatchObject({
        type: 'run.finished',
        data: { run_id: runId, agent: 'test_agent', status: 'succeeded', reason: 'final_answer' },
      });
      expect((await getRun(runId)).callback).toMatchObject({ url: receiver.url, events: ['finished'] });
      expect(await counted('retried')).toBeGreaterThanOrEqual(2);
      expect(await counted('delivered')).toBeGreaterThanOrEqual(1);
    });

    it('sends awaiting_approval and then finished, each again with the same webhook-id when the receiver answered 500', async () => {
      receiver.failFirst = true;
      try {
        const created = await post('/v1/runs', {
          agent: 'test_agent',
          input: 'needs a person',
          model: 'approval',
          callback: { url: receiver.url, events: ['awaiting_approval', 'finished'] },
        });
        expect(created.status).toBe(201);
        const runId = String(created.json.run_id);
        const waiting = await deliveryOf(runId, 'run.awaiting_approval', 'delivered');
        const run = await getRun(runId);
        expect(run.status).toBe('awaiting_approval');
        const decided = await post(`/v1/runs/${runId}/approvals`, {
          tool_call_id: run.pending_approvals[0].tool_call_id,
          decision: 'approve',
        });
        expect(decided.status).toBe(200);
        const finished = await deliveryOf(runId, 'run.finished', 'delivered');
        expect(finished.id).not.toBe(waiting.id);
        const got = receiver.of(runId);
        expect(got.every((r) => r.signedWith === 'key')).toBe(true);
        expect(got.filter((r) => r.type === 'run.awaiting_approval').map((r) => r.id)).toEqual([
          waiting.id,
          waiting.id,
        ]);
        expect(got.filter((r) => r.type === 'run.finished').map((r) => r.id)).toEqual([
          finished.id,
          finished.id,
        ]);
      } finally {
        receiver.failFirst = false;
      }
    });

    it('sends workflow.finished, signed, once a workflow started with a callback ends, and shows the delivery on the workflow', async () => {
      // Through the typed client, as a service would.
      const client = createClient({ baseUrl: base, apiKey: API_KEY });
      const { workflow_id: workflowId } = await client.createWorkflow({
        workflow: 'solo',
        input: 'hello',
        callback: { url: receiver.url },
      });
      const delivered = await waitFor(
        async () => {
          const wf = (await (
            await fetch(`${base}/v1/workflows/${workflowId}`, { headers })
          ).json()) as Record<string, any>;
          const d = wf.callback?.deliveries?.[0];
          return d?.state === 'delivered' ? { wf, d } : undefined;
        },
        60_000,
        'the workflow.finished delivery',
      );
      expect(delivered.wf).toMatchObject({
        status: 'succeeded',
        callback: { events: ['workflow_finished'] },
      });
      const got = receiver.received.filter((r) => r.type === 'workflow.finished');
      expect(got.map((r) => [r.id, r.signedWith])).toEqual([[delivered.d.id, 'key']]);
      expect(JSON.parse(got[0]!.raw.body).data).toMatchObject({
        workflow_id: workflowId,
        workflow: 'solo',
        status: 'succeeded',
      });
    });

    it('shows with `workflows show` the workflow.finished delivery of a workflow started with a callback', async () => {
      const client = createClient({ baseUrl: base, apiKey: API_KEY });
      const { workflow_id: workflowId } = await client.createWorkflow({
        workflow: 'solo',
        input: 'hello again',
        callback: { url: receiver.url },
      });
      const env = testEnv(t.prefix, sim);
      const out = await waitFor(
        async () => {
          const shown = await runCli(env, ['workflows', 'show', workflowId]);
          return /delivered/.test(shown.stdout) ? shown.stdout : undefined;
        },
        90_000,
        `workflows show ${workflowId} to list a delivered callback`,
      );
      expect(out).toMatch(
        /callback deliveries:\n {2}workflow\.finished {2}msg_\w+ {2}delivered {2}1 attempt {2}last status 204/,
      );
    });

    it("sends run.finished for a session's message that asked for a callback", async () => {
      const session = await post('/v1/sessions', { agent: 'test_agent' });
      expect(session.status).toBe(201);
      const created = await post(`/v1/sessions/${String(session.json.session_id)}/messages`, {
        agent: 'test_agent',
        input: 'hi again',
        model: 'echo',
        callback: { url: receiver.url },
      });
      expect(created.status).toBe(201);
      const runId = String(created.json.run_id);
      const delivered = await deliveryOf(runId, 'run.finished', 'delivered');
      expect(receiver.of(runId).map((r) => [r.id, r.signedWith])).toEqual([[delivered.id, 'key']]);
      expect(JSON.parse(receiver.of(runId)[0]!.raw.body).data.session_id).toBe(session.json.session_id);
    });

    it('dead-letters a delivery after its last attempt and shows it on the run', async () => {
      const gone = new Receiver();
      await gone.up();
      const url = gone.url;
      await gone.down();
      const created = await post('/v1/runs', {
        agent: 'test_agent',
        input: 'hi',
        model: 'echo',
        callback: { url },
      });
      expect(created.status).toBe(201);
      const dead = await deliveryOf(String(created.json.run_id), 'run.finished', 'dead_lettered');
      expect(dead).toMatchObject({ attempts: 6 });
      expect(dead.last_error).toMatch(/ECONNREFUSED/);
      expect(await counted('dead_lettered')).toBeGreaterThanOrEqual(1);
    });

    it("lists the key's dead letters across runs and delivers one again once the receiver is back", async () => {
      const late = new Receiver();
      await late.up();
      const url = `${late.url}?token=kept-out-of-listings`;
      await late.down();
      const created = await post('/v1/runs', {
        agent: 'test_agent',
        input: 'hi',
        model: 'echo',
        callback: { url },
      });
      const runId = String(created.json.run_id);
      const dead = await deliveryOf(runId, 'run.finished', 'dead_lettered');
      const listed = await fetch(`${base}/v1/callbacks/dead-letters`, { headers });
      expect(listed.status).toBe(200);
      const letters = ((await listed.json()) as { dead_letters: Array<Record<string, unknown>> })
        .dead_letters;
      expect(letters.find((l) => l.id === dead.id)).toMatchObject({
        run_id: runId,
        event: 'run.finished',
        url: late.url,
        attempts: 6,
        last_error: expect.stringMatching(/ECONNREFUSED/),
        dead_lettered_at: expect.any(Number),
      });
      // Another key's delivery, a malformed id, and one that is not dead-lettered are told apart.
      const unknown = await post(`/v1/callbacks/msg_${'0'.repeat(32)}/redeliver`, {});
      expect(unknown.status).toBe(404);
      expect((await post('/v1/callbacks/not-an-id/redeliver', {})).status).toBe(400);

      await late.up();
      const again = await post(`/v1/callbacks/${dead.id}/redeliver`, {});
      expect(again).toMatchObject({ status: 202, json: { id: dead.id, state: 'pending' } });
      const delivered = await deliveryOf(runId, 'run.finished', 'delivered');
      expect(delivered).toMatchObject({ id: dead.id, attempts: 1 });
      expect(late.of(runId).map((r) => [r.id, r.signedWith])).toEqual([[dead.id, 'key']]);
      const twice = await post(`/v1/callbacks/${dead.id}/redeliver`, {});
      expect(twice.status).toBe(409);
      expect(twice.json.error).toMatchObject({
        code: 'INVALID_STATE',
        message: expect.stringMatching(/is not dead-lettered/),
      });
      await late.down();
    });

    it('shows with `runs show` each callback delivery of a run: event, id, state, attempts, last status or error, a dead letter marked in words', async () => {
      // Started and watched through Redis and the CLI, not the API: the key's request rate is the other tests'.
      const env = testEnv(t.prefix, sim);
      const shown = (runId: string, until: RegExp) =>
        waitFor(
          async () => {
            const out = await runCli(env, ['runs', 'show', runId]);
            return out.code === 0 && until.test(out.stdout) ? out.stdout : undefined;
          },
          90_000,
          `runs show ${runId} to match ${String(until)}`,
        );
      // Nothing listens on the discard port: every attempt is refused.
      const dead = await enqueueWithCallback('http://127.0.0.1:9/hook');
      const ok = await enqueueWithCallback(receiver.url);
      const plain = await enqueueRun({
        redisUrl: REDIS_URL,
        prefix: t.prefix,
        agent: 'test_agent',
        input: 'hi',
      });
      const deadOut = await shown(dead.runId, /DEAD-LETTERED/);
      expect(deadOut).toContain('callback deliveries:');
      expect(deadOut).toMatch(
        /run\.finished {2}msg_\w+ {2}DEAD-LETTERED {2}6 attempts {2}last error: .*ECONNREFUSED/,
      );
      const okOut = await shown(ok.runId, /delivered/);
      expect(okOut).toMatch(/run\.finished {2}msg_\w+ {2}delivered {2}1 attempt {2}last status 204/);
      expect(okOut).not.toContain('DEAD-LETTERED');
      // A run that asked for no callback shows no section.
      expect(await shown(plain.runId, /outcome: succeeded/)).not.toContain('callback deliveries');
    });

    it('refuses at the door a callback URL that resolves to a loopback or private address not allowed, naming it', async () => {
      for (const url of [
        'http://10.1.2.3/hook',
        'http://localhost:9/hook',
        'http://[::1]:9/hook',
        'http://169.254.169.254/',
      ]) {
        const refused = await post('/v1/runs', { agent: 'test_agent', input: 'hi', callback: { url } });
        expect(refused.status, url).toBe(400);
        expect(refused.json.error.code).toBe('VALIDATION_FAILED');
        expect(refused.json.error.message).toMatch(/resolves to .*loopback, private or link-local/);
      }
      const notHttp = await post('/v1/runs', {
        agent: 'test_agent',
        input: 'hi',
        callback: { url: 'file:///etc/passwd' },
      });
      expect(notHttp.status).toBe(400);
    });

    it('re-checks the address when sending: a run enqueued through Redis with a private callback URL is dead-lettered without a request', async () => {
      const { runId } = await enqueueWithCallback('http://10.1.2.3/hook');
      const dead = await deliveryOf(runId, 'run.finished', 'dead_lettered');
      expect(dead).toMatchObject({ attempts: 1 });
      expect(dead.last_error).toMatch(/10\.1\.2\.3, a loopback, private or link-local address/);
    });

    it('signs a run started through Redis with the operator secret for runs without a key', async () => {
      const { runId } = await enqueueWithCallback(receiver.url);
      await deliveryOf(runId, 'run.finished', 'delivered');
      expect(receiver.of(runId).map((r) => r.signedWith)).toEqual(['redis']);
    });

    it('keeps no signing secret in Redis: delivery jobs and states name the key, never its secret', async () => {
      let cursor = '0';
      const values: string[] = [];
      do {
        const [next, keys] = await t.redis.scan(cursor, 'MATCH', `${t.prefix}:*`, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) {
          const type = await t.redis.type(key);
          if (type === 'string') values.push((await t.redis.get(key)) ?? '');
          if (type === 'hash') values.push(...Object.values(await t.redis.hgetall(key)));
          if (type === 'list') values.push(...(await t.redis.lrange(key, 0, -1)));
          if (type === 'stream')
            values.push(...(await t.redis.xrange(key, '-', '+')).flatMap(([, fields]) => fields));
        }
      } while (cursor !== '0');
      const jobs = values.filter((v) => v.includes('"webhook') || v.includes('"url":"http'));
      expect(jobs.length).toBeGreaterThan(0);
      for (const secret of [SECRET, REDIS_SECRET])
        expect(values.filter((v) => v.includes(secret.slice('whsec_'.length)))).toEqual([]);
    });

    it("has the client's verifyWebhook refuse a changed body, a stale timestamp, another secret and missing headers, each by its code", () => {
      const delivery = receiver.received.find((r) => r.signedWith === 'key');
      if (!delivery) throw new Error('no delivery received yet');
      const { headers: h, body } = delivery.raw;
      const nowS = Number(h['webhook-timestamp']);
      const code = (f: () => unknown) => {
        try {
          f();
        } catch (err) {
          return err instanceof WebhookVerificationError ? err.code : String(err);
        }
        return 'accepted';
      };
      expect(code(() => verifyWebhook(SECRET, h, body, { nowS }))).toBe('accepted');
      expect(code(() => verifyWebhook(SECRET, h, body.replace('succeeded', 'failed'), { nowS }))).toBe(
        'WEBHOOK_SIGNATURE_INVALID',
      );
      expect(code(() => verifyWebhook(REDIS_SECRET, h, body, { nowS }))).toBe('WEBHOOK_SIGNATURE_INVALID');
      expect(code(() => verifyWebhook(SECRET, h, body, { nowS: nowS + 301 }))).toBe(
        'WEBHOOK_TIMESTAMP_STALE',
      );
      expect(code(() => verifyWebhook(SECRET, { ...h, 'webhook-id': '' }, body, { nowS }))).toBe(
        'WEBHOOK_HEADERS_MISSING',
      );
      expect(code(() => verifyWebhook('whsec_short', h, body, { nowS }))).toBe('WEBHOOK_SECRET_INVALID');
    });

    // Last: it replaces the scheduler the other tests use.
    it('loses no delivery when the scheduler that queued it stops: another scheduler of the fleet sends it once the receiver is back', async () => {
      await receiver.down();
      const created = await post('/v1/runs', {
        agent: 'test_agent',
        input: 'hi',
        model: 'echo',
        callback: { url: receiver.url },
      });
      const runId = String(created.json.run_id);
      const pending = await deliveryOf(runId, 'run.finished', 'pending');
      const other = await startAnother();
      await scheduler.close();
      scheduler = other;
      base = String(other.apiUrl);
      await receiver.up();
      const delivered = await deliveryOf(runId, 'run.finished', 'delivered');
      expect(delivered.id).toBe(pending.id);
      expect(receiver.of(runId).map((r) => [r.id, r.signedWith])).toEqual([[pending.id, 'key']]);
    });
  },
);
