import { QueueKeys } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentList,
  API_ERRORS,
  DecisionView,
  ErrorResponse,
  parseReply,
  RESERVED_RUN_IDS,
  RunList,
  RunView,
  serializeReply,
  SessionView,
  type TSchema,
  type ToolResult,
} from '@agent-reach/protocol';
import { AgentReachApiError } from '@agent-reach/client';
import { createAjv } from '@agent-reach/shared';
import { startApiHarness, type ApiHarness } from './helpers/api.js';
import { addCommonScenarios } from './helpers/scenarios.js';

const result: ToolResult = {
  tool_call_id: 'call_1',
  name: 'noop',
  ok: true,
  status: 'ok',
  content: { echo: 'x' },
  duration_ms: 3,
  attempts: 1,
};

describe('the wire contract in @agent-reach/protocol', () => {
  it("names exactly the keys BullMQ keeps beside a queue's jobs as reserved run ids", () => {
    const bullmq = Object.keys(new QueueKeys().getKeys('q')).filter(Boolean);
    expect([...RESERVED_RUN_IDS].sort()).toEqual(bullmq.sort());
  });

  it("reads the reply an executor writes, and a reply of the previous release, in this release's shape", () => {
    expect(parseReply(serializeReply('run_1', JSON.stringify(result)))).toEqual({
      v: 2,
      run_id: 'run_1',
      result,
    });
    expect(parseReply(JSON.stringify({ runId: 'run_2', result }))).toEqual({ v: 2, run_id: 'run_2', result });
  });

  it('refuses a reply of an unknown version with an error naming that version', () => {
    expect(() => parseReply(JSON.stringify({ v: 3, run_id: 'run_1', result }))).toThrow(
      'tool-call reply has wire version 3; this release reads versions 1 and 2',
    );
  });
});

describe("the API's answers validate against the protocol's schemas, which the client's types are made from", () => {
  let h: ApiHarness;
  const ajv = createAjv();
  const expectValid = (schema: TSchema, value: unknown) => {
    const validate = ajv.compile(schema);
    expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  };
  beforeAll(async () => {
    h = await startApiHarness();
    addCommonScenarios(h.sim);
  });
  afterAll(async () => h?.close());

  it('answers runs, lists, agents, sessions and decisions in the shapes of RunView, RunList, AgentList, SessionView and DecisionView', async () => {
    const created = await h.client.createRun({
      agent: 'test_agent',
      input: 'weather in 杭州?',
      model: 'weather-then-answer',
      metadata: { ticket: '1' },
    });
    expectValid(RunView, created);
    const done = await h.client.waitForRun(created.run_id, { timeoutMs: 20_000 });
    expect(done.steps.length).toBeGreaterThan(0);
    expectValid(RunView, done);
    expectValid(RunList, await h.client.listRuns({ limit: 5 }));
    expectValid(AgentList, { agents: await h.client.listAgents() });
    expectValid(SessionView, await h.client.createSession());

    const parked = await h.client.createRun({ agent: 'test_agent', input: 'sensitive', model: 'approval' });
    let decided = 0;
    for await (const e of h.client.streamEvents(parked.run_id)) {
      if (e.type !== 'approval_requested') continue;
      expectValid(DecisionView, await h.client.approve(parked.run_id, e.data.tool_call_id));
      decided += 1;
    }
    expect(decided).toBe(1);
  });

  it("answers each error with the status the protocol's table gives its code, in the ErrorResponse shape", async () => {
    const missing = await h.client.getRun('run_does_not_exist').catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(AgentReachApiError);
    const e = missing as AgentReachApiError;
    expect(e.code).toBe('NOT_FOUND');
    expect(e.status).toBe(API_ERRORS.NOT_FOUND.status);
    expectValid(ErrorResponse, { error: { code: e.code, message: e.message } });
    const unknownAgent = (await h.client
      .createRun({ agent: 'nobody_here', input: 'hi' })
      .catch((err: unknown) => err)) as AgentReachApiError;
    expect(unknownAgent.code).toBe('UNKNOWN_AGENT');
    expect(unknownAgent.status).toBe(API_ERRORS.UNKNOWN_AGENT.status);
  });
});
