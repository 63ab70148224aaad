import path from 'node:path';
import { Type } from '@sinclair/typebox';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest, Scenario } from '@agent-reach/llm-sim';
import { enqueueRun } from '@agent-reach/client/queue';
import { replayRun } from '@agent-reach/scheduler';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { runCli } from './helpers/cli.js';
import { ROOT } from './helpers/processes.js';
import { testEnv } from './helpers/runs.js';

const AGENTS_FILE = path.join(ROOT, 'test/fixtures/agents-structured.yaml');
const WORKFLOWS_FILE = path.join(ROOT, 'test/fixtures/workflows-structured.yaml');

/** The city reporter's schema, as its agents file declares it. */
const CITY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['city', 'temp_c'],
  properties: { city: { type: 'string' }, temp_c: { type: 'number' } },
};

const SCENARIOS: Scenario[] = [
  {
    // Not JSON, then JSON missing a field, then a fenced valid answer.
    name: 'so-fixes',
    turns: [
      { content: 'It is 21 degrees in Paris.' },
      { content: '{"city": "Paris"}' },
      { content: '```json\n{"city": "Paris", "temp_c": 21}\n```' },
    ],
  },
  { name: 'so-never', turns: [{ content: '{"city": 7, "temp_c": "warm"}', repeat: true }] },
  { name: 'so-valid', turns: [{ content: '{"ok": true, "note": "fine"}' }] },
  // The model of runs that name none (the OpenAI door's): wrong once, then right.
  { name: 'so-wf-weather', turns: [{ content: '{"city": "Oslo", "temp_c": 3}' }] },
  { name: 'so-wf-brief', turns: [{ content: 'brief: {{ user }}' }] },
  { name: 'so-door', turns: [{ content: '{"ok": "yes"}' }, { content: '{"ok": true, "note": "door"}' }] },
];

const MODELS = SCENARIOS.map((s) => s.name);

describe('structured output: runs whose answer must match a JSON Schema', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness(
      { allowedModels: MODELS },
      { AGENTS_FILE, WORKFLOWS_FILE, OPENAI_MODEL: 'so-door' },
    );
    for (const s of SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => h?.close());

  /** The model requests of one run, in order (each run's conversation starts from its input). */
  const requestsOf = (input: string): RecordedRequest[] =>
    h.sim.requests.filter((r) => {
      const messages = (r.body as { messages?: Array<{ role: string; content: unknown }> }).messages ?? [];
      return messages.find((m) => m.role === 'user')?.content === input;
    });
  const lastMessage = (r: RecordedRequest) =>
    (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!;

  it('tells the model what was wrong with each invalid answer and succeeds with the parsed output once it answers valid JSON', async () => {
    const input = 'report the temperature (fixes)';
    const run = await h.client.run(
      { agent: 'city_reporter', input, model: 'so-fixes' },
      { timeoutMs: 20_000 },
    );
    expect(run).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
    expect(run.output).toEqual({ city: 'Paris', temp_c: 21 });
    expect(JSON.parse(run.answer!)).toEqual(run.output);

    const asked = requestsOf(input);
    expect(asked).toHaveLength(3);
    for (const r of asked)
      expect((r.body as { response_format?: unknown }).response_format).toEqual({
        type: 'json_schema',
        json_schema: { name: 'city_reporter_output', schema: CITY_SCHEMA, strict: true },
      });
    const first = lastMessage(asked[1]!);
    expect(first.role).toBe('user');
    expect(first.content).toContain('"constraint":"json"');
    const second = lastMessage(asked[2]!);
    expect(second.content).toContain('"field":"/temp_c"');
    expect(second.content).toContain('"constraint":"required"');
    expect(second.content).toContain('a value for the required field \\"temp_c\\"');

    const events = (await h.control.events(run.run_id)).map((e) => e.event);
    const invalid = events.filter((e) => e.type === 'output_invalid');
    expect(invalid.map((e) => e.type === 'output_invalid' && e.retries_left)).toEqual([1, 0]);
    const finished = events.find((e) => e.type === 'run_finished');
    expect(finished?.type === 'run_finished' && finished.outcome.output).toEqual({
      city: 'Paris',
      temp_c: 21,
    });
  });

  it('replays a corrected run from its recording to the same output, asking no model', async () => {
    const input = 'report the temperature (replayed)';
    const run = await h.client.run(
      { agent: 'city_reporter', input, model: 'so-fixes' },
      { timeoutMs: 20_000 },
    );
    const asked = h.sim.requests.length;
    const result = await replayRun(run.run_id, { runner: h.schedulers[0]!.runner, store: h.control.store });
    expect(result.outcome).toMatchObject({ status: 'succeeded', output: { city: 'Paris', temp_c: 21 } });
    expect(result.differences).toEqual([]);
    expect(h.sim.requests.length).toBe(asked);
  });

  it('fails the run with invalid_output, naming the problems, when the model never answers valid JSON', async () => {
    const input = 'report the temperature (never)';
    const run = await h.client.run(
      { agent: 'city_reporter', input, model: 'so-never' },
      { timeoutMs: 20_000 },
    );
    expect(run).toMatchObject({ status: 'failed', reason: 'invalid_output' });
    expect(run.output).toBeUndefined();
    expect(run.answer).toBe('{"city": 7, "temp_c": "warm"}');
    expect(run.report).toContain('/city must be string');
    expect(run.report).toContain('/temp_c must be number');
    // The first answer and the default two retries.
    expect(requestsOf(input)).toHaveLength(3);
  });

  it("ends at once with invalid_output when the agent's output_retries is 0", async () => {
    const input = 'are you ok (stubborn)';
    const run = await h.client.run({ agent: 'stubborn', input, model: 'so-never' }, { timeoutMs: 20_000 });
    expect(run).toMatchObject({ status: 'failed', reason: 'invalid_output' });
    expect(run.report).toContain('must have required property');
    expect(requestsOf(input)).toHaveLength(1);
    // A schema with an open object and an optional field is outside strict mode: asked non-strict.
    const format = (requestsOf(input)[0]!.body as { response_format: { json_schema: { strict: boolean } } })
      .response_format;
    expect(format.json_schema.strict).toBe(false);
  });

  it("takes a run request's own output schema, given as TypeBox, for an agent that declares none, and types the output", async () => {
    const Ok = Type.Object({ ok: Type.Boolean(), note: Type.String() });
    const input = 'are you ok (own schema)';
    const run = await h.client.run(
      { agent: 'free_text', input, model: 'so-valid', outputSchema: Ok },
      { timeoutMs: 20_000 },
    );
    expect(run.status).toBe('succeeded');
    const output: { ok: boolean; note: string } | undefined = run.output;
    expect(output).toEqual({ ok: true, note: 'fine' });
    const format = (requestsOf(input)[0]!.body as { response_format: { json_schema: { schema: unknown } } })
      .response_format;
    expect(format.json_schema.schema).toEqual(JSON.parse(JSON.stringify(Ok)));
  });

  it('asks a run without an output schema for no response format and gives it no output', async () => {
    const input = 'are you ok (free)';
    const run = await h.client.run({ agent: 'free_text', input, model: 'so-valid' }, { timeoutMs: 20_000 });
    expect(run).toMatchObject({ status: 'succeeded', answer: '{"ok": true, "note": "fine"}' });
    expect(run.output).toBeUndefined();
    expect((requestsOf(input)[0]!.body as { response_format?: unknown }).response_format).toBeUndefined();
  });

  it('refuses a run request whose output schema is not usable, with a 400 naming the problem', async () => {
    const bad = async (schema: unknown) => {
      const res = await h.call('POST', '/v1/runs', {
        body: { agent: 'free_text', input: 'x', output_schema: schema },
      });
      expect(res.status).toBe(400);
      expect(res.json.error.code).toBe('VALIDATION_FAILED');
      return res.json.error.message as string;
    };
    expect(await bad({ type: 'object', properties: { a: { type: 'strng' } } })).toMatch(
      /^output_schema is not a usable JSON Schema: .*type/,
    );
    expect(await bad({ type: 'object', requird: ['a'] })).toMatch(/unknown keyword: "requird"/);
    expect(await bad([1])).toMatch(/output_schema/);
  });

  it('carries an output schema given to enqueueRun, and ends a run whose schema is not usable invalid_job naming the problem', async () => {
    const runId = `so-enq-${Date.now()}`;
    const base = { prefix: h.prefix, connection: h.producer, agent: 'free_text', model: 'so-valid' };
    await enqueueRun({
      ...base,
      runId,
      input: 'are you ok (enqueued)',
      outputSchema: { type: 'object', required: ['ok'], properties: { ok: { const: true } } },
    });
    const run = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect(run).toMatchObject({ status: 'succeeded', output: { ok: true, note: 'fine' } });
    const badId = `so-enq-bad-${Date.now()}`;
    await enqueueRun({ ...base, runId: badId, input: 'x', outputSchema: { type: 'object', minimum: 'one' } });
    const bad = await h.client.waitForRun(badId, { timeoutMs: 20_000 });
    expect(bad).toMatchObject({ status: 'failed', reason: 'invalid_job' });
    expect(bad.report).toContain(
      'output_schema is not a usable JSON Schema: schema is invalid: data/minimum',
    );
    await expect(enqueueRun({ ...base, input: 'x', outputSchema: [] })).rejects.toThrow(
      'outputSchema must be a JSON Schema object',
    );
  });

  describe('through the OpenAI-compatible door', () => {
    const OK = {
      type: 'object',
      additionalProperties: false,
      required: ['ok', 'note'],
      properties: { ok: { type: 'boolean' }, note: { type: 'string' } },
    };
    const openai = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: FULL_KEY, maxRetries: 0 });
    const formatSent = (input: string) =>
      requestsOf(input).map((r) => (r.body as { response_format?: unknown }).response_format);

    it('maps response_format json_schema to the run output schema and answers with the JSON text', async () => {
      const input = 'are you ok (door)';
      const { data, response } = await openai()
        .chat.completions.create({
          model: 'free_text',
          messages: [{ role: 'user', content: input }],
          response_format: { type: 'json_schema', json_schema: { name: 'status', schema: OK, strict: true } },
        })
        .withResponse();
      expect(JSON.parse(data.choices[0]!.message.content!)).toEqual({ ok: true, note: 'door' });
      const run = await h.client.getRun(response.headers.get('x-agent-reach-run-id')!);
      expect(run).toMatchObject({ status: 'succeeded', output: { ok: true, note: 'door' } });
      const expected = {
        type: 'json_schema',
        json_schema: { name: 'free_text_output', schema: OK, strict: true },
      };
      expect(formatSent(input)).toEqual([expected, expected]);
    });

    it('streams only the valid JSON answer, not the answer the model was asked to correct', async () => {
      const input = 'are you ok (door, streamed)';
      const stream = await openai().chat.completions.create({
        model: 'free_text',
        messages: [{ role: 'user', content: input }],
        response_format: { type: 'json_schema', json_schema: { name: 'status', schema: OK } },
        stream: true,
      });
      let content = '';
      for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      expect(JSON.parse(content)).toEqual({ ok: true, note: 'door' });
    });

    it("takes the Responses API's text.format json_schema as the output schema", async () => {
      const input = 'are you ok (responses)';
      const res = await openai().responses.create({
        model: 'free_text',
        input,
        text: { format: { type: 'json_schema', name: 'status', schema: OK, strict: true } },
      });
      expect(JSON.parse(res.output_text)).toEqual({ ok: true, note: 'door' });
      expect(formatSent(input)).toHaveLength(2);
    });

    it('refuses a response_format whose schema is not usable, naming the field', async () => {
      const err = await openai()
        .chat.completions.create({
          model: 'free_text',
          messages: [{ role: 'user', content: 'x' }],
          response_format: {
            type: 'json_schema',
            json_schema: { name: 's', schema: { type: 'object', nope: 1 } },
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
        );
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err!.param).toBe('response_format.json_schema.schema');
      expect(err!.message).toContain('unknown keyword: "nope"');
    });
  });

  it("lists an agent's object output schema as its MCP tool's outputSchema and returns the output as structuredContent", async () => {
    const client = new Client({ name: 'structured-output-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${FULL_KEY}` } },
      }),
    );
    try {
      const { tools } = await client.listTools();
      const status = tools.find((t) => t.name === 'status_reporter');
      expect(status?.outputSchema).toMatchObject({ type: 'object', required: ['ok', 'note'] });
      expect(tools.find((t) => t.name === 'free_text')?.outputSchema).toBeUndefined();
      const result = (await client.callTool({
        name: 'status_reporter',
        arguments: { input: 'are you ok (mcp)' },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ ok: true, note: 'door' });
      expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual({ ok: true, note: 'door' });
    } finally {
      await client.close();
    }
  });

  it("passes a field of one workflow node's JSON output into the next node's input", async () => {
    const started = await h.client.createWorkflow({ workflow: 'forecast_then_brief', input: 'Oslo' });
    const done = await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: 'succeeded', output: 'brief: Write a brief for Oslo at 3 C' });
    const weather = await h.client.getRun(done.nodes[0]!.run_id!);
    expect(weather.output).toEqual({ city: 'Oslo', temp_c: 3 });
  });

  it('prints the output as JSON from the CLI, and refuses an --output-schema file that is not a usable schema', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'structured-cli-'));
    try {
      const env = { ...testEnv(h.prefix, h.sim), AGENTS_FILE, WORKFLOWS_FILE };
      const good = path.join(dir, 'ok.json');
      await writeFile(good, JSON.stringify({ type: 'object', required: ['ok'] }));
      const ran = await runCli(env, [
        'run',
        'are you ok (cli)',
        '--agent',
        'free_text',
        '--model',
        'so-valid',
        '--output-schema',
        good,
        '--follow',
      ]);
      expect(ran.code, ran.stderr + ran.stdout).toBe(0);
      expect(ran.stdout).toContain('output:\n  {\n    "ok": true,\n    "note": "fine"\n  }');
      const runId = /started (\S+)/.exec(ran.stdout)![1]!;
      const show = await runCli(env, ['runs', 'show', runId]);
      expect(show.stdout).toContain('output:\n  {\n    "ok": true,');
      const bad = path.join(dir, 'bad.json');
      await writeFile(bad, JSON.stringify({ type: 'object', requird: ['ok'] }));
      const refused = await runCli(env, ['run', 'x', '--agent', 'free_text', '--output-schema', bad]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `--output-schema ${bad}: is not a usable JSON Schema: strict mode: unknown keyword: "requird"`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
