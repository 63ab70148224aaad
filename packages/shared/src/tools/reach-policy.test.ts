import { describe, expect, it } from 'vitest';
import { defineTool, StringEnum, Type, type AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from '../config/agents.js';
import { applyAliases, foldAliases, reachDefinition, scopeRefusal } from './reach-policy.js';
import { ToolRegistry } from './registry.js';

const refused = (fn: () => unknown): AgentReachError => {
  try {
    fn();
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected a refusal');
};

describe('reach settings in the configuration document', () => {
  const document = [
    'agents:',
    '  - name: support',
    '    tools: [query_order_status]',
    '    scopes: [orders.read, "mcp:fs"]',
    'tool_defaults: { result_budget_chars: 3000, summarize_results: false }',
    'tool_groups:',
    '  ext:',
    '    mcp_servers:',
    '      - name: fs',
    '        command: node',
    '        access_scope: files.read',
    '        tools:',
    '          write_file: { access_scope: files.write, requires_grant: true, summarize_result: true }',
    '          forecast: { aliases: { city: { 成都: Chengdu } }, result_budget_chars: 900 }',
    '    openapi:',
    '      - name: billing',
    '        document: billing.yaml',
    '        access_scope: billing.read',
    '        operations: [refund]',
    '        tools:',
    '          refund: { access_scope: billing.write, requires_grant: true, aliases: { reason: { dup: duplicate } } }',
  ].join('\n');

  it('accepts scopes, fleet tool defaults, and scope, grant, aliases and shaping per MCP and OpenAPI tool', () => {
    const file = parseAgents(document, 'a.yaml', ['query_order_status']);
    expect(file.agents.get('support')?.scopes).toEqual(['orders.read', 'mcp:fs']);
    expect(file.document.tool_defaults).toEqual({ result_budget_chars: 3000, summarize_results: false });
    const fs = file.document.tool_groups?.ext?.mcp_servers?.[0];
    expect(fs?.tools?.write_file).toEqual({
      access_scope: 'files.write',
      requires_grant: true,
      summarize_result: true,
    });
    expect(file.document.tool_groups?.ext?.openapi?.[0]?.tools?.refund?.requires_grant).toBe(true);
  });

  it('refuses a malformed scope, naming the agent and the field, and an unknown tool default', () => {
    const bad = document
      .replace('[orders.read, "mcp:fs"]', '["orders read"]')
      .replace('summarize_results: false', 'summarise: false');
    const err = refused(() => parseAgents(bad, 'a.yaml', ['query_order_status']));
    expect(err.details).toEqual([
      'a.yaml: agent "support": scopes.0 must match pattern "^[A-Za-z0-9_.:-]{1,64}$"',
      'a.yaml: tool_defaults: unknown field "summarise" (did you mean "summarize_results"?)',
    ]);
  });

  it("gives a configured tool its own scope, else its source's", () => {
    expect(reachDefinition({ requires_grant: true }, 'mcp:fs')).toEqual({
      accessScope: 'mcp:fs',
      requiresGrant: true,
    });
    expect(reachDefinition({ access_scope: 'files.write', result_budget_chars: 900 }, 'mcp:fs')).toEqual({
      accessScope: 'files.write',
      resultBudgetChars: 900,
    });
    expect(reachDefinition(undefined, 'openapi:billing')).toEqual({ accessScope: 'openapi:billing' });
  });
});

describe('scopes', () => {
  const tool = (accessScope: string | undefined) => ({ name: 'refund', accessScope });

  it('checks nothing for an agent without scopes, or a tool without one', () => {
    expect(scopeRefusal({ name: 'a' }, tool('orders.write'))).toBeUndefined();
    expect(scopeRefusal({ name: 'a', scopes: [] }, tool(undefined))).toBeUndefined();
  });

  it('lets an agent with scopes reach its scopes and the platform scope, and refuses the rest', () => {
    const agent = { name: 'a', scopes: ['orders.read'] };
    expect(scopeRefusal(agent, tool('orders.read'))).toBeUndefined();
    expect(scopeRefusal(agent, tool('platform'))).toBeUndefined();
    expect(scopeRefusal(agent, tool('orders.write'))).toMatchObject({
      kind: 'forbidden',
      reason: 'scope',
      retryable: false,
    });
    expect(scopeRefusal({ name: 'a', scopes: [] }, tool('orders.read'))?.message).toContain(
      'its scopes: none',
    );
  });
});

describe('argument aliases', () => {
  const aliases = foldAliases({ city: { 成都: 'Chengdu', Peking: 'Beijing' } });

  it('rewrites a string value that matches an alias, ignoring case and surrounding spaces, without touching the input', () => {
    const args = { city: '  peking ', days: 2 };
    expect(applyAliases(args, aliases)).toEqual({ args: { city: 'Beijing', days: 2 }, changed: true });
    expect(args.city).toBe('  peking ');
  });

  it('leaves values that match no alias, and values that are not strings, as they are', () => {
    const args = { city: 'Paris', other: 'peking' };
    expect(applyAliases(args, aliases)).toEqual({ args, changed: false });
    expect(applyAliases({ city: 7 }, aliases)).toEqual({ args: { city: 7 }, changed: false });
  });

  it("refuses at registration aliases naming a missing argument or a value outside the argument's enum", () => {
    const city = (argumentAliases: Record<string, Record<string, string>>) =>
      defineTool({
        name: 'city_tool',
        description: 'Weather.',
        parameters: Type.Object({ city: StringEnum(['Chengdu', 'Beijing']) }),
        argumentAliases,
        handler: () => null,
      });
    expect(refused(() => new ToolRegistry().register(city({ town: { x: 'Chengdu' } }))).message).toBe(
      'tool "city_tool": argumentAliases town: the tool has no argument "town"',
    );
    expect(refused(() => new ToolRegistry().register(city({ city: { 西安: 'Xian' } }))).message).toBe(
      'tool "city_tool": argumentAliases city: "西安" stands for "Xian", which is not one of ["Chengdu","Beijing"]',
    );
    const registry = new ToolRegistry().register(city({ city: { 成都: 'Chengdu' } }));
    expect(registry.catalog()[0]).toMatchObject({ argumentAliases: { city: { 成都: 'Chengdu' } } });
  });
});
