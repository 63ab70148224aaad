import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiToolName, publishConfig, type ConfigDocument } from '@agent-reach/shared';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { startBillingServer } from './helpers/billing-server.js';
import { startLoopHarness, toolMessages } from './helpers/loop.js';
import { startPlatform } from './helpers/platform.js';
import { ROOT } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';

const TOKEN = 'billing-token-0123456789';
const BILLING_TOOLS = [
  'billing__listInvoices',
  'billing__getInvoice',
  'billing__createInvoice',
  'billing__flakyReport',
  'billing__slowReport',
  'billing__whoAmI',
  'billing31__getInvoice',
];

/** The configuration of the tests: the billing document beside it, the 3.1 one read from the server. */
function billingConfig(serverUrl: string): ConfigDocument {
  return {
    agents: [{ name: 'billing_agent', tools: BILLING_TOOLS }],
    tool_groups: {
      billing: {
        openapi: [
          {
            name: 'billing',
            document: './billing.openapi.yaml',
            base_url: serverUrl,
            auth: { type: 'bearer', env: 'BILLING_TOKEN' },
            operations: [
              'listInvoices',
              'getInvoice',
              'createInvoice',
              'flakyReport',
              'slowReport',
              'whoAmI',
              'getInvoices',
            ],
            tools: {
              listInvoices: { access_scope: 'billing.read', aliases: { status: { unpaid: 'open' } } },
              flakyReport: { max_attempts: 3, backoff_ms: 0 },
              slowReport: { timeout_ms: 300, max_attempts: 1 },
            },
          },
          { name: 'ledger', document: './ledger.openapi.yaml', operations: ['listEntries'] },
          { name: 'billing31', document: `${serverUrl}/openapi-3.1.json`, operations: ['getInvoice'] },
        ],
      },
    },
  };
}

describe('OpenAPI operations as tools, against a real HTTP server described by its own document', () => {
  let billing: Awaited<ReturnType<typeof startBillingServer>>;
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  let dir: string;
  const call = (name: string, args: unknown) => h.platform.call(name, args, 'billing_agent');

  beforeAll(async () => {
    billing = await startBillingServer({ flakyFailures: 2 });
    dir = mkdtempSync(path.join(tmpdir(), 'openapi-tools-'));
    copyFileSync(
      path.join(ROOT, 'test/fixtures/billing.openapi.yaml'),
      path.join(dir, 'billing.openapi.yaml'),
    );
    // JSON is YAML: the file is what an operator would write, in its plainest form.
    writeFileSync(path.join(dir, 'agents.yaml'), JSON.stringify(billingConfig(billing.url), null, 2));
    h = await startLoopHarness(
      { AGENTS_FILE: path.join(dir, 'agents.yaml') },
      {},
      { executor: { env: { BILLING_TOKEN: TOKEN } } },
    );
  });
  afterAll(async () => {
    await h?.close();
    await billing?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers each listed operation as <source>__<operationId> with one flat argument schema', () => {
    const registry = h.platform.executor.registry;
    const get = registry.get('billing__getInvoice');
    expect(get).toMatchObject({
      group: 'billing',
      readOnly: true,
      description: 'One invoice by its id.',
      parameters: {
        type: 'object',
        required: ['invoiceId'],
        additionalProperties: false,
        properties: { invoiceId: { type: 'string', pattern: '^INV-[0-9]+$' } },
      },
    });
    const create = registry.get('billing__createInvoice');
    expect(create?.readOnly).toBe(false);
    expect(create?.description).toBe(
      'Create an invoice.\n\nThe server refuses amounts above 1000000 with 422.',
    );
    expect(create?.parameters).toEqual({
      type: 'object',
      required: ['body'],
      additionalProperties: false,
      properties: {
        body: {
          type: 'object',
          required: ['customer', 'amount'],
          properties: {
            customer: { type: 'string', minLength: 1 },
            amount: { type: 'number', exclusiveMinimum: 0 },
            note: { type: ['string', 'null'] },
          },
        },
      },
    });
    expect(registry.get('billing__listInvoices')?.parameters).toMatchObject({
      properties: {
        status: { type: 'string', enum: ['open', 'paid'] },
        limit: { type: 'integer', format: 'int32', minimum: 1, maximum: 100 },
      },
    });
  });

  it("gives an operation the configuration's scope and aliases, others their source's scope", async () => {
    const registry = h.platform.executor.registry;
    expect(registry.get('billing__listInvoices')?.accessScope).toBe('billing.read');
    expect(registry.get('billing__getInvoice')?.accessScope).toBe('openapi:billing');
    const listed = await call('billing__listInvoices', { status: 'Unpaid' });
    expect(listed).toMatchObject({ ok: true, normalized_arguments: { status: 'open' } });
    expect(billing.requestsTo('/invoices').at(-1)?.url).toContain('status=open');
  });

  it('answers a call with the parsed JSON body of the operation, query parameters in the URL', async () => {
    const one = await call('billing__getInvoice', { invoiceId: 'INV-2' });
    expect(one).toMatchObject({ ok: true, attempts: 1, content: { id: 'INV-2', customer: 'Globex' } });
    const paid = await call('billing__listInvoices', { status: 'paid', limit: 5 });
    expect(paid.content).toEqual([
      { id: 'INV-2', customer: 'Globex', amount: 80, status: 'paid', note: 'paid by card' },
    ]);
    expect(billing.requestsTo('/invoices?').map((r) => r.url)).toContain('/invoices?status=paid&limit=5');
  });

  it('sends the JSON body and reports a 422 as invalid_arguments with the status and a body excerpt', async () => {
    const made = await call('billing__createInvoice', { body: { customer: 'Initech', amount: 42 } });
    expect(made).toMatchObject({ ok: true, content: { id: 'INV-3', customer: 'Initech', amount: 42 } });
    const refused = await call('billing__createInvoice', {
      body: { customer: 'Initech', amount: 2_000_000 },
    });
    expect(refused).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'invalid_arguments', status: 422, retryable: false },
    });
    expect(refused.error?.message).toContain('HTTP 422');
    expect(refused.error?.message).toContain('amount above the limit of 1000000');
    const posted = billing.seen.filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body));
    expect(posted).toEqual([
      { customer: 'Initech', amount: 42 },
      { customer: 'Initech', amount: 2_000_000 },
    ]);
  });

  it('reports a 404 as a structured error with its status, not retried', async () => {
    const result = await call('billing__getInvoice', { invoiceId: 'INV-404' });
    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'invalid_arguments', status: 404, retryable: false },
    });
    expect(result.error?.message).toBe(
      'HTTP 404 Not Found from GET /invoices/INV-404: {"error":"no invoice INV-404"}',
    );
    expect(billing.requestsTo('/invoices/INV-404')).toHaveLength(1);
  });

  it('retries a 503 with the executor backoff and returns the answer that follows', async () => {
    const result = await call('billing__flakyReport', { key: 'retry-test' });
    expect(result).toMatchObject({ ok: true, attempts: 3, content: { report: 'ready after 3 requests' } });
    expect(billing.requestsTo('/flaky?key=retry-test')).toHaveLength(3);
  });

  it('aborts a slow operation at its timeout, and the server sees the request go away', async () => {
    const result = await call('billing__slowReport', {});
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { kind: 'timeout', retryable: true } });
    expect(result.error?.message).toContain('did not finish within 300 ms');
    await waitFor(() => billing.requestsTo('/slow')[0]?.aborted, 10_000, 'the slow request to be aborted');
  });

  it('sends the bearer credential read from the environment', async () => {
    const result = await call('billing__whoAmI', {});
    expect(result).toMatchObject({ ok: true, content: { credential: `Bearer ${TOKEN}` } });
  });

  it('refuses invalid arguments before any HTTP request is made', async () => {
    const before = billing.seen.length;
    const badId = await call('billing__getInvoice', { invoiceId: 'nope' });
    expect(badId).toMatchObject({
      ok: false,
      attempts: 0,
      error: { kind: 'invalid_arguments', field: '/invoiceId', constraint: 'pattern' },
    });
    const noAmount = await call('billing__createInvoice', { body: { customer: 'Initech' } });
    expect(noAmount.error).toMatchObject({ kind: 'invalid_arguments', field: '/body/amount' });
    const extra = await call('billing__whoAmI', { as: 'admin' });
    expect(extra.error?.kind).toBe('invalid_arguments');
    expect(billing.seen.length).toBe(before);
  });

  it('reads an OpenAPI 3.1 document from a URL, its relative server resolved against that URL', async () => {
    expect(h.platform.executor.registry.get('billing31__getInvoice')?.parameters).toMatchObject({
      required: ['invoiceId'],
      properties: {
        invoiceId: { type: 'string', pattern: '^INV-[0-9]+$', examples: ['INV-1'] },
        fields: { type: ['array', 'null'], items: { type: 'string' } },
      },
    });
    const result = await call('billing31__getInvoice', { invoiceId: 'INV-1', fields: ['id', 'amount'] });
    expect(result).toMatchObject({ ok: true, content: { id: 'INV-1', amount: 120.5 } });
    expect(billing.requestsTo('/invoices/INV-1?').map((r) => r.url)).toEqual([
      '/invoices/INV-1?fields=id%2Camount',
    ]);
  });

  it('names the source and the operation of every problem and keeps serving the rest', () => {
    const status = h.platform.executor.openApi.status();
    const byName = new Map(status.map((s) => [s.name, s]));
    expect(byName.get('billing')?.tools).toHaveLength(6);
    expect(byName.get('billing')?.problems).toEqual([
      'openapi source "billing" (tool group "billing"): operation "getInvoices" is not in document ./billing.openapi.yaml (did you mean "getInvoice"?)',
    ]);
    expect(byName.get('ledger')?.tools).toEqual([]);
    expect(byName.get('ledger')?.problems).toHaveLength(1);
    expect(byName.get('ledger')?.problems[0]).toMatch(
      /^openapi source "ledger" \(tool group "billing"\): cannot read document \.\/ledger\.openapi\.yaml: /,
    );
    expect(h.platform.executor.registry.has('billing__getInvoices')).toBe(false);
    expect(h.platform.executor.registry.has('billing__getInvoice')).toBe(true);
  });

  it('lets an agent run call an operation, read a 404 as a structured error and answer from the API', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'openapi-invoice',
        turns: [
          { tool_calls: [{ name: 'billing__getInvoice', arguments: { invoiceId: 'INV-77' } }] },
          { tool_calls: [{ name: 'billing__getInvoice', arguments: { invoiceId: 'INV-1' } }] },
          {
            content:
              '{{ last.content.id }} is {{ last.content.status }}: {{ last.content.amount }} for {{ last.content.customer }}.',
          },
        ],
      },
      { agent: 'billing_agent' },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'INV-1 is open: 120.5 for ACME.' });
    expect(state.steps.map((s) => [s.tool, s.ok, s.error_kind])).toEqual([
      ['billing__getInvoice', false, 'invalid_arguments'],
      ['billing__getInvoice', true, undefined],
    ]);
    const [, second] = h.turns('openapi-invoice');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'invalid_arguments',
      status: 404,
    });
    const offered = (second!.body.tools ?? []).map(
      (t) => (t as { function: { name: string } }).function.name,
    );
    expect(offered).toContain('billing__getInvoice');
  });

  it('takes up a source that config apply adds in a new tool group, and serves its queue', async () => {
    const next = billingConfig(billing.url);
    const document: ConfigDocument = {
      agents: [{ name: 'billing_agent', tools: [...BILLING_TOOLS, 'reports__get_whoami'] }],
      tool_groups: {
        ...next.tool_groups,
        reports: {
          openapi: [
            {
              name: 'reports',
              document: path.join(dir, 'billing.openapi.yaml'),
              base_url: billing.url,
              auth: { type: 'header', name: 'Authorization', env: 'BILLING_TOKEN' },
              operations: ['GET /whoami'],
            },
          ],
        },
      },
    };
    await publishConfig(h.platform.producer, h.platform.keys, document, 'openapi test');
    await waitFor(() => h.platform.executor.registry.has('reports__get_whoami'), 15_000, 'the new source');
    expect(h.platform.executor.registry.get('reports__get_whoami')?.group).toBe('reports');
    expect(h.platform.executor.worker.groups).toContain('reports');
    await waitFor(
      async () => (await h.platform.catalog.refresh()).get('reports__get_whoami'),
      15_000,
      'the catalog to announce the new tool',
    );
    const result = await h.platform.call('reports__get_whoami', {}, 'billing_agent');
    expect(result).toMatchObject({ ok: true, content: { credential: TOKEN } });
  });
});

describe('the project API as an OpenAPI source (the scheduler publishes /openapi.json)', () => {
  const OPERATIONS = [
    'GET /v1/agents',
    'POST /v1/runs',
    'GET /v1/runs',
    'GET /v1/runs/{id}',
    'POST /v1/sessions',
    'GET /v1/sessions/{id}',
    'POST /v1/workflows',
  ];
  const TOOLS = OPERATIONS.map((op) => openApiToolName('reach', op));
  let api: ApiHarness;
  let platform: Awaited<ReturnType<typeof startPlatform>>;
  let dir: string;
  const call = (name: string, args: unknown) => platform.call(name, args, 'ops_agent');

  beforeAll(async () => {
    api = await startApiHarness();
    dir = mkdtempSync(path.join(tmpdir(), 'openapi-api-'));
    const document = `${api.url}/openapi.json`;
    const config: ConfigDocument = {
      agents: [{ name: 'ops_agent', tools: [...TOOLS, 'anon__get_v1_agents'] }],
      tool_groups: {
        ops: {
          openapi: [
            {
              name: 'reach',
              document,
              base_url: api.url,
              auth: { type: 'bearer', env: 'REACH_API_KEY' },
              operations: OPERATIONS,
            },
            { name: 'anon', document, base_url: api.url, operations: ['GET /v1/agents'] },
          ],
        },
      },
    };
    writeFileSync(path.join(dir, 'agents.yaml'), JSON.stringify(config, null, 2));
    platform = await startPlatform(
      { AGENTS_FILE: path.join(dir, 'agents.yaml') },
      { executor: { env: { REACH_API_KEY: FULL_KEY } } },
    );
  });
  afterAll(async () => {
    await platform?.close();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('turns every listed operation of the project API into a tool whose schema compiles', () => {
    const reach = platform.executor.openApi.status().find((s) => s.name === 'reach');
    expect(reach?.problems).toEqual([]);
    expect(reach?.tools).toEqual(TOOLS);
    expect(TOOLS).toContain('reach__get_v1_runs_id');
    expect(platform.executor.registry.get('reach__get_v1_runs_id')?.parameters).toMatchObject({
      required: ['id'],
      properties: { id: { type: 'string' } },
    });
  });

  it('calls the API with the key read from the environment and gets its JSON answer', async () => {
    const result = await call('reach__get_v1_agents', {});
    expect(result.ok).toBe(true);
    const names = (result.content as { agents: Array<{ name: string }> }).agents.map((a) => a.name);
    expect(names).toContain('test_agent');
  });

  it('starts a run with a JSON body and reads it back by its path parameter', async () => {
    const started = await call('reach__post_v1_runs', { body: { agent: 'test_agent', input: 'hello' } });
    expect(started).toMatchObject({ ok: true, content: { run_id: expect.any(String) } });
    const runId = (started.content as { run_id: string }).run_id;
    const read = await call('reach__get_v1_runs_id', { id: runId });
    expect(read).toMatchObject({ ok: true, content: { run_id: runId, agent: 'test_agent' } });
  });

  it('reports the 401 of a call without the credential as execution_error with its status', async () => {
    const result = await call('anon__get_v1_agents', {});
    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'execution_error', status: 401, retryable: false },
    });
    expect(result.error?.message).toMatch(/^HTTP 401 Unauthorized from GET \/v1\/agents: /);
  });
});
