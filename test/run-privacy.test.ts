import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FULL_KEY,
  openEventStream,
  runDoors,
  startApiHarness,
  startParkedRun,
  type ApiHarness,
  type ParkedRun,
} from './helpers/api.js';
import { addCommonScenarios } from './helpers/scenarios.js';

/** Two callers with the same reach: each limited to `test_agent`. */
const DESK_A = 'desk-a-key-0123456789abcdef';
const DESK_B = 'desk-b-key-0123456789abcdef';
const KEYS = [
  { key: FULL_KEY, name: 'tester' },
  { key: DESK_A, name: 'desk-a', agents: ['test_agent'] },
  { key: DESK_B, name: 'desk-b', agents: ['test_agent'] },
];

async function login(url: string, key: string): Promise<string> {
  const res = await fetch(`${url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key }),
  });
  expect(res.status).toBe(204);
  return (res.headers.get('set-cookie') ?? '').split(';')[0]!;
}

describe("session privacy: a session's runs are hidden from other keys on every door", () => {
  let h: ApiHarness;
  let sessionRun: ParkedRun;
  beforeAll(async () => {
    h = await startApiHarness({ apiKeys: KEYS });
    addCommonScenarios(h.sim);
    expect(
      (await h.call('POST', '/v1/sessions', { key: DESK_A, body: { session_id: 'desk-a-private' } })).status,
    ).toBe(201);
    sessionRun = await startParkedRun(h, DESK_A, '/v1/sessions/desk-a-private/messages', {
      agent: 'test_agent',
      input: 'the vault code is 4711; do the sensitive thing',
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers another key limited to the same agent 404 on the session's run, its events, cancel and approvals", async () => {
    const { runId } = sessionRun;
    for (const [method, path, body] of runDoors(sessionRun)) {
      const res = await h.call(method, path, { key: DESK_B, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error).toEqual({ code: 'NOT_FOUND', message: `run ${runId} not found` });
      expect(res.text).not.toContain('4711');
    }
    // The same answer as for a run that does not exist.
    const ghost = await h.call('GET', '/v1/runs/run_no-such-run', { key: DESK_B });
    expect(ghost.json.error).toEqual({ code: 'NOT_FOUND', message: 'run run_no-such-run not found' });
    // Nothing was decided or cancelled: the owner still finds it parked, its input intact.
    const mine = await h.call('GET', `/v1/runs/${runId}`, { key: DESK_A });
    expect(mine.status).toBe(200);
    expect(mine.json).toMatchObject({ status: 'awaiting_approval', cancel_requested: false });
    expect(mine.json.input).toContain('4711');
    const follow = await openEventStream(h.url, runId, { key: DESK_A });
    expect(follow.stream.status).toBe(200);
    follow.close();
    await follow.ended;
    expect((await h.call('GET', `/v1/runs/${runId}`, { key: FULL_KEY })).status).toBe(200);
  });

  it("leaves the session's runs out of another key's run list, search and offset pages, and keeps them in the owner's", async () => {
    const { runId, traceId } = sessionRun;
    // A run of the other key's own, newer than the session's, so an offset page of one starts past it.
    const own = await h.call('POST', '/v1/runs', { key: DESK_B, body: { agent: 'test_agent', input: 'hi' } });
    expect(own.status).toBe(201);
    const ids = async (key: string, query: string) => {
      const res = await h.call('GET', `/v1/runs${query}`, { key });
      expect(res.status, query).toBe(200);
      return (res.json.runs as Array<{ run_id: string }>).map((r) => r.run_id);
    };
    for (const query of [
      '',
      '?agent=test_agent',
      `?trace_id=${traceId}`,
      '?status=awaiting_approval',
      '?offset=1&agent=test_agent',
      '?offset=1',
    ]) {
      expect(await ids(DESK_B, query), query).not.toContain(runId);
      expect(await ids(DESK_A, query), query).toContain(runId);
    }
    expect(await ids(DESK_B, '')).toContain(own.json.run_id);
  });

  it("leaves the session's parked call out of another key's inspector approvals and tool statistics", async () => {
    const { runId } = sessionRun;
    const approvals = async (key: string) => {
      const res = await fetch(`${h.url}/ui/api/approvals`, { headers: { cookie: await login(h.url, key) } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { approvals: Array<{ run_id: string; input: string }> }).approvals;
    };
    const theirs = await approvals(DESK_B);
    expect(theirs.map((a) => a.run_id)).not.toContain(runId);
    expect(JSON.stringify(theirs)).not.toContain('4711');
    expect((await approvals(DESK_A)).map((a) => a.run_id)).toContain(runId);
    const stats = async (key: string) => {
      const res = await fetch(`${h.url}/ui/api/tool-stats`, { headers: { cookie: await login(h.url, key) } });
      return ((await res.json()) as { runs: number }).runs;
    };
    // The owner's statistics count the session's run; the other key's count one run fewer at most.
    const runs = (await h.call('GET', '/v1/runs?agent=test_agent', { key: FULL_KEY })).json.runs.length;
    expect(await stats(DESK_A)).toBe(runs);
    expect(await stats(DESK_B)).toBe(runs - 1);
  });
});
