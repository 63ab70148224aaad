import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import { openApiToolName } from './openapi-config.js';

const refused = (text: string, knownTools?: string[]): AgentReachError => {
  try {
    parseAgents(text, 'agents.yaml', knownTools);
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected the document to be refused');
};

describe('openApiToolName', () => {
  it('joins source and operationId with two underscores and replaces characters a tool name cannot hold', () => {
    expect(openApiToolName('billing', 'getInvoice')).toBe('billing__getInvoice');
    expect(openApiToolName('billing', 'invoices.get v2')).toBe('billing__invoices_get_v2');
  });

  it('names an operation given as METHOD /path by its lower-case method and path', () => {
    expect(openApiToolName('reach', 'GET /v1/runs/{id}')).toBe('reach__get_v1_runs_id');
    expect(openApiToolName('reach', 'post /v1/runs')).toBe('reach__post_v1_runs');
  });

  it('cuts a name longer than 64 characters and keeps two long names apart by a hash', () => {
    const a = openApiToolName('billing', `${'x'.repeat(70)}A`);
    const b = openApiToolName('billing', `${'x'.repeat(70)}B`);
    expect(a).toHaveLength(64);
    expect(a).toMatch(/^billing__x+_[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
  });
});

describe('openapi sources in the configuration document', () => {
  const valid = `
agents:
  - name: billing_agent
    tools: [billing__getInvoice, billing__get_invoices]
tool_groups:
  billing:
    concurrency: 4
    openapi:
      - name: billing
        document: ./billing.openapi.yaml
        auth: { type: bearer, env: BILLING_TOKEN }
        operations: [getInvoice, GET /invoices]
        tools: { getInvoice: { timeout_ms: 3000, max_attempts: 2 } }
`;

  it('accepts agents that name the tools its sources declare, without reading any document', () => {
    const file = parseAgents(valid, 'agents.yaml', ['query_weather']);
    expect([...file.reachable('billing_agent')]).toEqual(['billing__getInvoice', 'billing__get_invoices']);
    expect(file.toolGroups.get('billing')?.openapi?.[0]?.operations).toEqual(['getInvoice', 'GET /invoices']);
  });

  it('lists every problem at once: schema errors, a source named twice, colliding names, policy of an unlisted operation, a credential without its name', () => {
    const e = refused(`
agents:
  - name: billing_agent
    tools: [billing__getInvoice]
tool_groups:
  billing:
    openapi:
      - name: billing
        document: ./billing.openapi.yaml
        operations: [get.invoice, get_invoice]
        tools: { getInvoice: { timeout_ms: 3000 } }
        auth: { type: header, env: BILLING_KEY }
  other:
    openapi:
      - name: billing
        document: https://example.invalid/openapi.json
        operations: [listInvoices]
`);
    expect(e.code).toBe('AGENTS_INVALID');
    expect(e.details).toEqual([
      'agents.yaml: tool_groups.billing.openapi "billing": auth of type "header" needs "name"',
      'agents.yaml: tool_groups.billing.openapi "billing": tools."getInvoice" is not one of its operations',
      'agents.yaml: tool_groups.other.openapi "billing": the source name is used twice (also in tool_groups.billing)',
      'agents.yaml: openapi "billing": operation "get_invoice" and "get.invoice" of "billing" both become tool "billing__get_invoice"',
    ]);
  });

  it('refuses what the schema forbids: a secret written in the file, a bad source name, no operations', () => {
    const e = refused(`
agents:
  - name: billing_agent
    tools: []
tool_groups:
  billing:
    openapi:
      - name: bill ing
        document: ./billing.openapi.yaml
        auth: { type: bearer, env: BILLING_TOKEN, token: s3cret }
        operations: []
`);
    expect(e.details).toEqual([
      'agents.yaml: tool_groups.billing.openapi.0.name must match pattern "^[a-zA-Z0-9_-]{1,32}$"',
      'agents.yaml: tool_groups.billing.openapi.0.auth: unknown field "token" (did you mean "type"?)',
      'agents.yaml: tool_groups.billing.openapi.0.operations must NOT have fewer than 1 items',
    ]);
  });

  it("refuses an agent tool in a source's namespace that its operations do not declare, naming the operations rather than suggesting a rename", () => {
    const e = refused(valid.replace('billing__get_invoices', 'billing__listInvoices'), ['query_weather']);
    expect(e.details).toEqual([
      'agents.yaml: agent "billing_agent": tools[1] "billing__listInvoices" is none of the operations OpenAPI source "billing" (tool_groups.billing) lists (getInvoice, GET /invoices): add its operation to "operations", or correct one of them (config check reads the document and names its operations)',
    ]);
  });

  it('still refuses an agent naming a tool that neither the registry nor a source declares, with the closest name', () => {
    const e = refused(valid.replace('billing__get_invoices', 'query_wether'), ['query_weather']);
    expect(e.details).toEqual([
      'agents.yaml: agent "billing_agent": tools[1] "query_wether" is not a registered tool (did you mean "query_weather"?)',
    ]);
  });
});
