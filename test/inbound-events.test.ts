import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWebhookSecret, signWebhook } from '@agent-reach/client';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { loadInboundEvents } from '@agent-reach/scheduler/internal';
import { createLogger, loadConfig } from '@agent-reach/shared';
import testTools from './helpers/test-tools.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const API_KEY = `ev-${randomUUID().replace(/-/g, '')}`;
const SW_SECRET = generateWebhookSecret();
const GITHUB_SECRET = `gh-${randomUUID()}`;
const MAX_BODY_BYTES = 4096;

type Json = Record<string, any>;

// llm-sim, an executor and a scheduler serving the API with an events file; senders sign as Standard
// Webhooks (the client's helper) and GitHub (X-Hub-Signature-256) do.
describe(
  'inbound events: signed events start the runs the events file maps them to, once per id',
  { timeout: 120_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let executor: ExecutorProcess;
    let scheduler: SchedulerProcess;
    let dir: string;

    const send = async (name: string, body: string, headers: Record<string, string>) => {
      const res = await fetch(`${scheduler.apiUrl}/v1/events/${name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      return { status: res.status, json: (await res.json()) as Json };
    };
    /** The Standard Webhooks headers a sender adds, signed with the client's helper. */
    const signed = (id: string, body: string, timestampS = Math.floor(Date.now() / 1000)) => ({
      'webhook-id': id,
      'webhook-timestamp': String(timestampS),
      'webhook-signature': signWebhook(SW_SECRET, id, timestampS, body),
    });
    const getRun = async (runId: string) =>
      (await (
        await fetch(`${scheduler.apiUrl}/v1/runs/${runId}`, {
          headers: { authorization: `Bearer ${API_KEY}` },
        })
      ).json()) as Json;

    beforeAll(async () => {
      t = testRedis();
      dir = await mkdtemp(path.join(tmpdir(), 'events-'));
      const eventsFile = path.join(dir, 'events.yaml');
      await writeFile(
        eventsFile,
        [
          `max_body_bytes: ${MAX_BODY_BYTES}`,
          'events:',
          '  order.created:',
          '    signature: { scheme: standard_webhooks, secret_env: ORDERS_SECRET }',
          '    runs:',
          '      - agent: test_agent',
          '        input: "Summarise order {{payload.order.id}} of {{payload.order.customer}}"',
          '        metadata: { order_id: "{{payload.order.id}}" }',
          '  push:',
          '    signature: { scheme: hmac_sha256, secret_env: GITHUB_SECRET, header: X-Hub-Signature-256, id_header: X-GitHub-Delivery }',
          '    runs:',
          '      - agent: test_agent',
          '        input: "Review {{payload.repository.full_name}}"',
          '  report.requested:',
          '    signature: { scheme: standard_webhooks, secret_env: ORDERS_SECRET }',
          '    runs:',
          '      - workflow: solo',
          '        input: "Report on {{payload.topic}}"',
        ].join('\n'),
      );
      const workflowsFile = path.join(dir, 'workflows.yaml');
      // One workflow of one node, in YAML's flow style.
      await writeFile(
        workflowsFile,
        'workflows: [{ name: solo, nodes: [{ id: only, agent: test_agent }] }]\n',
      );
      sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
      const env = testEnv(t.prefix, sim, {
        ...apiEnv(API_KEY),
        EVENTS_FILE: eventsFile,
        WORKFLOWS_FILE: workflowsFile,
        ORDERS_SECRET: SW_SECRET,
        GITHUB_SECRET,
      });
      const logger = createLogger('test', { level: 'silent' });
      executor = await startExecutor(loadConfig(env), { extraTools: testTools, logger });
      scheduler = await startScheduler(loadConfig(env), { logger, env });
    }, 120_000);
    afterAll(async () => {
      await scheduler?.close();
      await executor?.close();
      await sim?.close();
      await rm(dir, { recursive: true, force: true });
      await t?.cleanup();
    });

    it('starts the mapped run with the payload in its input, and a repeated event id starts nothing', async () => {
      const id = `msg_${randomUUID()}`;
      const body = JSON.stringify({ order: { id: 'A-17', customer: 'Ada' } });
      const first = await send('order.created', body, signed(id, body));
      expect(first.status, JSON.stringify(first.json)).toBe(202);
      expect(first.json).toMatchObject({ event: 'order.created', event_id: id, duplicate: false });
      const [runId] = first.json.run_ids as string[];
      const run = await getRun(String(runId));
      expect(run.input).toBe('Summarise order A-17 of Ada');
      expect(run.metadata).toMatchObject({ order_id: 'A-17', event: 'order.created', event_id: id });
      // The sender retries (same id, signed again later): nothing new starts.
      const again = await send('order.created', body, signed(id, body, Math.floor(Date.now() / 1000) + 1));
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ duplicate: true, run_ids: [] });
      await waitFor(
        async () => (await getRun(String(runId))).status === 'succeeded',
        60_000,
        'the run to end',
      );
    });

    it('starts a workflow of the workflows file for an event mapped to one, once per event id', async () => {
      const id = `msg_${randomUUID()}`;
      const body = JSON.stringify({ topic: 'returns' });
      const first = await send('report.requested', body, signed(id, body));
      expect(first.status, JSON.stringify(first.json)).toBe(202);
      expect(first.json.run_ids).toEqual([]);
      const [workflowId] = first.json.workflow_ids as string[];
      const headers = { authorization: `Bearer ${API_KEY}` };
      const workflow = async () =>
        (await (await fetch(`${scheduler.apiUrl}/v1/workflows/${workflowId}`, { headers })).json()) as Json;
      expect(await workflow()).toMatchObject({ input: 'Report on returns', metadata: { event_id: id } });
      const again = await send('report.requested', body, signed(id, body));
      expect(again.json).toMatchObject({ duplicate: true, workflow_ids: [] });
      await waitFor(async () => (await workflow()).finished_at !== undefined, 60_000, 'the workflow to end');
    });

    it('takes a GitHub-style X-Hub-Signature-256 and deduplicates by its delivery id', async () => {
      const body = JSON.stringify({ repository: { full_name: 'acme/reach' } });
      const signature = `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`;
      const headers = { 'x-hub-signature-256': signature, 'x-github-delivery': randomUUID() };
      const first = await send('push', body, headers);
      expect(first.status).toBe(202);
      expect((await getRun(String(first.json.run_ids[0]))).input).toBe('Review acme/reach');
      expect((await send('push', body, headers)).json.duplicate).toBe(true);
      const wrong = await send('push', body, {
        ...headers,
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
      });
      expect(wrong.status).toBe(401);
      expect(wrong.json.error.code).toBe('SIGNATURE_INVALID');
    });

    it('refuses a bad signature, a stale timestamp, an oversized body and an undeclared event with their codes, starting nothing', async () => {
      const body = JSON.stringify({ order: { id: 'B-1' } });
      const id = `msg_${randomUUID()}`;
      const tampered = await send('order.created', body.replace('B-1', 'B-2'), signed(id, body));
      expect(tampered.status).toBe(401);
      expect(tampered.json.error.code).toBe('SIGNATURE_INVALID');
      const unsigned = await send('order.created', body, {});
      expect(unsigned.json.error.code).toBe('SIGNATURE_INVALID');
      const stale = await send(
        'order.created',
        body,
        signed(id, body, Math.floor(Date.now() / 1000) - 6 * 60),
      );
      expect(stale.status).toBe(400);
      expect(stale.json.error.code).toBe('EVENT_STALE');
      const big = JSON.stringify({ order: { id: 'C', note: 'x'.repeat(MAX_BODY_BYTES) } });
      const oversized = await send('order.created', big, signed(`msg_${randomUUID()}`, big));
      expect(oversized.status).toBe(413);
      expect(oversized.json.error.code).toBe('BODY_TOO_LARGE');
      const unknown = await send('order.deleted', body, signed(id, body));
      expect(unknown.status).toBe(404);
      expect(unknown.json.error.code).toBe('UNKNOWN_EVENT');
      // None of the refusals claimed the id: the genuine event is still taken.
      const genuine = await send('order.created', body, signed(id, body));
      expect(genuine.status).toBe(202);
      // Counted by event and outcome on the scheduler's /metrics.
      const text = await scheduler.metricsRegistry.metrics();
      for (const outcome of ['started', 'duplicate', 'SIGNATURE_INVALID', 'EVENT_STALE'])
        expect(text).toMatch(
          new RegExp(
            `^agent_reach_inbound_events_total\\{event="order.created",outcome="${outcome}"\\} [1-9]`,
            'm',
          ),
        );
    });

    it('keeps /v1/runs/:id/events a keyed read beside the public /v1/events/:name', async () => {
      const res = await fetch(`${scheduler.apiUrl}/v1/runs/run_missing/events`);
      expect(res.status).toBe(401);
      const get = await fetch(`${scheduler.apiUrl}/v1/events/order.created`);
      expect(get.status).toBe(404);
    });
  },
);

describe('the events file (EVENTS_FILE)', () => {
  it('reports every problem at once, naming each event and field and never a secret; a missing file declares none and says so', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'events-file-'));
    try {
      const file = path.join(dir, 'events.yaml');
      await writeFile(
        file,
        [
          'events:',
          '  a:',
          '    signature: { scheme: standard_webhooks, secret_env: UNSET_SECRET }',
          '    runs: [{ agent: test_agent, input: x }]',
          '  b:',
          '    signature: { scheme: md5, secret_env: SET_SECRET }',
          '    runs: []',
        ].join('\n'),
      );
      const secret = 'not-to-be-printed-anywhere';
      let message = '';
      try {
        loadInboundEvents(file, { SET_SECRET: secret });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain('events.a.signature.secret_env: UNSET_SECRET is not set');
      expect(message).toContain('events.b.signature.scheme must be standard_webhooks or hmac_sha256');
      expect(message).toContain('events.b.runs must list at least one run');
      expect(message).not.toContain(secret);
      const told: string[] = [];
      const none = loadInboundEvents(path.join(dir, 'absent.yaml'), {}, (f) => told.push(f));
      expect(none.events.size).toBe(0);
      expect(told).toEqual([path.join(dir, 'absent.yaml')]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
