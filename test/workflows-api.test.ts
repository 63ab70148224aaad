import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERRORS, WorkflowList, WorkflowView, type TSchema } from '@agent-reach/protocol';
import { createAjv } from '@agent-reach/shared';
import { FULL_KEY, LIMITED_KEY, sseMessages, startApiHarness, type ApiHarness } from './helpers/api.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

describe('HTTP API: /v1/workflows (real Redis, real scheduler and executor, llm-sim)', () => {
  let h: ApiHarness;
  const ajv = createAjv();
  const expectValid = (schema: TSchema, value: unknown) => {
    const validate = ajv.compile(schema);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  };
  beforeAll(async () => {
    h = await startApiHarness({}, { WORKFLOWS_FILE: WORKFLOWS_FIXTURE });
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('starts a workflow, and the same Idempotency-Key returns the same workflow (another body: 409)', async () => {
    const body = { workflow: 'diamond', input: 'restock the shop', metadata: { ticket: 'T-1' } };
    const headers = { 'idempotency-key': 'wf-key-1' };
    const first = await h.call('POST', '/v1/workflows', { body, headers });
    expect(first.status).toBe(201);
    expect(first.json).toMatchObject({
      workflow: 'diamond',
      status: 'running',
      input: 'restock the shop',
      metadata: { ticket: 'T-1' },
      cancel_requested: false,
      low_confidence: false,
    });
    expect(first.json.nodes.map((n: { id: string; depends_on: string[] }) => [n.id, n.depends_on])).toEqual([
      ['a', []],
      ['b', ['a']],
      ['c', ['a']],
      ['d', ['b', 'c']],
    ]);
    const again = await h.call('POST', '/v1/workflows', { body, headers });
    expect(again.status).toBe(200);
    expect(again.json.workflow_id).toBe(first.json.workflow_id);
    const other = await h.call('POST', '/v1/workflows', { body: { ...body, input: 'else' }, headers });
    expect(other.status).toBe(409);
    expect(other.json.error.code).toBe('CONFLICT');

    expectValid(WorkflowView, first.json);
    const done = await h.client.waitForWorkflow(first.json.workflow_id as string, { timeoutMs: 30_000 });
    expectValid(WorkflowView, done);
    expect(done).toMatchObject({ status: 'succeeded', reason: 'completed', low_confidence: false });
    expect(done.nodes.map((n) => [n.id, n.status, n.run_id])).toEqual(
      ['a', 'b', 'c', 'd'].map((id) => [id, 'succeeded', `${done.workflow_id}.${id}`]),
    );
    expect(done.output).toBe(
      `d saw [combine (${done.nodes[1]!.output}) and (${done.nodes[2]!.output}) for restock the shop]`,
    );
    // Each node's run is an ordinary run, readable by its id.
    const run = await h.client.getRun(done.nodes[3]!.run_id!);
    expect(run.metadata).toEqual({ workflow_id: done.workflow_id, workflow_node: 'd' });
    expect(run.workflow).toEqual({ workflow_id: done.workflow_id, node: 'd' });
  });

  it("streams a workflow's events, linking each node's run, and ends after workflow_finished", async () => {
    const started = await h.client.createWorkflow({ workflow: 'diamond', input: 'count again' });
    const res = await h.call('GET', `/v1/workflows/${started.workflow_id}/events`);
    expect(res.status).toBe(200);
    const messages = sseMessages(res.text).filter((m) => m.id !== undefined);
    expect(messages.at(-1)?.event).toBe('workflow_finished');
    const nodeStarts = messages
      .filter((m) => m.event === 'node_started')
      .map((m) => JSON.parse(m.data!) as { node: string; run_id: string });
    expect(nodeStarts.map((e) => [e.node, e.run_id])).toEqual(
      ['a', 'b', 'c', 'd'].map((n) => [n, `${started.workflow_id}.${n}`]),
    );
    const events = [];
    for await (const e of h.client.streamWorkflowEvents(started.workflow_id)) events.push(e.type);
    expect(events).toEqual(messages.map((m) => m.event));
  });

  it('lists workflows newest first, filtered by workflow and status', async () => {
    const list = await h.client.listWorkflows({ workflow: 'diamond', status: 'succeeded' });
    expectValid(WorkflowList, list);
    expect(list.workflows.length).toBeGreaterThanOrEqual(2);
    expect(list.workflows.every((w) => w.workflow === 'diamond' && w.status === 'succeeded')).toBe(true);
    const times = list.workflows.map((w) => w.created_at);
    expect(times).toEqual([...times].sort((x, y) => y - x));
  });

  it('shows low_confidence in the list of workflows and on each node of a chain after a defaulted node', async () => {
    const started = await h.client.createWorkflow({ workflow: 'chain', input: 'count' });
    const done = await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'succeeded', low_confidence: true });
    expect(done.nodes.map((n) => [n.id, n.status, n.low_confidence, n.low_confidence_from])).toEqual([
      ['a', 'defaulted', true, ['a']],
      ['b', 'succeeded', true, ['a']],
      ['c', 'succeeded', true, ['a']],
    ]);
    const list = await h.call('GET', '/v1/workflows?limit=100');
    expectValid(WorkflowList, list.json);
    const rows = list.json.workflows as Array<{
      workflow_id: string;
      workflow: string;
      low_confidence: boolean;
    }>;
    expect(rows.find((w) => w.workflow_id === started.workflow_id)?.low_confidence).toBe(true);
    expect(rows.filter((w) => w.workflow === 'diamond').every((w) => w.low_confidence === false)).toBe(true);
  });

  it('cancels a running workflow (202) and refuses to cancel it again once it ended (409)', async () => {
    const started = await h.client.createWorkflow({ workflow: 'hangs', input: 'wait' });
    const cancelled = await h.call('POST', `/v1/workflows/${started.workflow_id}/cancel`);
    expect(cancelled.status).toBe(202);
    expect(cancelled.json.cancel_requested).toBe(true);
    const done = await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ status: 'cancelled', reason: 'cancel_requested' });
    const again = await h.call('POST', `/v1/workflows/${started.workflow_id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('INVALID_STATE');
  });

  it('answers 422 UNKNOWN_WORKFLOW, 404 for an unknown id, and 403 to a key limited to other agents', async () => {
    const unknown = await h.call('POST', '/v1/workflows', { body: { workflow: 'nope', input: 'x' } });
    expect(unknown.status).toBe(API_ERRORS.UNKNOWN_WORKFLOW.status);
    expect(unknown.json.error).toMatchObject({ code: 'UNKNOWN_WORKFLOW' });
    expect(unknown.json.error.message).toMatch(/declared: diamond, late_with_default, late_aborts, hangs/);
    expect((await h.call('GET', '/v1/workflows/wf_missing')).status).toBe(404);
    const limited = await h.call('POST', '/v1/workflows', {
      key: LIMITED_KEY,
      body: { workflow: 'diamond', input: 'x' },
    });
    expect(limited.status).toBe(403);
    expect((await h.call('GET', '/v1/workflows', { key: LIMITED_KEY })).json.workflows).toEqual([]);
  });

  it('documents the workflow routes in the OpenAPI document', async () => {
    const doc = (await h.call('GET', '/openapi.json')).json as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(doc.paths['/v1/workflows'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/v1/workflows/{id}'] ?? {})).toEqual(['get']);
    expect(Object.keys(doc.paths['/v1/workflows/{id}/cancel'] ?? {})).toEqual(['post']);
    expect(Object.keys(doc.paths['/v1/workflows/{id}/events'] ?? {})).toEqual(['get']);
  });

  // Many clients send `Content-Type: application/json` on every POST, with no body on those that take none.
  describe('a POST that takes no body, sent with Content-Type: application/json and an empty body', () => {
    const empty = { raw: '' };

    it('cancels a running workflow (202)', async () => {
      const started = await h.client.createWorkflow({ workflow: 'hangs', input: 'wait' });
      const res = await h.call('POST', `/v1/workflows/${started.workflow_id}/cancel`, empty);
      expect(res.status, res.text).toBe(202);
      expect(res.json).toMatchObject({ workflow_id: started.workflow_id, cancel_requested: true });
      expect(await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 15_000 })).toMatchObject({
        status: 'cancelled',
      });
    });

    it('cancels a running run (202)', async () => {
      const runId = await h.control.start({ agent: 'test_agent', input: 'wait', model: 'wf-never' });
      const res = await h.call('POST', `/v1/runs/${runId}/cancel`, empty);
      expect(res.status, res.text).toBe(202);
      expect(res.json).toMatchObject({ run_id: runId, cancel_requested: true });
    });

    it('creates a session with a generated id (201)', async () => {
      const res = await h.call('POST', '/v1/sessions', empty);
      expect(res.status, res.text).toBe(201);
      expect(res.json.session_id).toMatch(/^sess_/);
    });

    it('logs out of the inspector (204)', async () => {
      const login = await fetch(`${h.url}/ui/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: FULL_KEY }),
      });
      expect(login.status).toBe(204);
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
      const res = await h.call('POST', '/ui/logout', {
        ...empty,
        key: null,
        headers: { cookie, 'x-agent-reach-ui': '1' },
      });
      expect(res.status, res.text).toBe(204);
      expect((await fetch(`${h.url}/ui/api/me`, { headers: { cookie } })).status).toBe(401);
    });
  });
});
