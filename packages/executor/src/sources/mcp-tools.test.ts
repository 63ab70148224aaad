import { describe, expect, it } from 'vitest';
import { isNoResult } from '@agent-reach/protocol';
import { callError, mcpToolDefinition, toModelResult, toolDigest, unmountable } from './mcp-tools.js';

describe('what the model reads of an MCP tool result', () => {
  it('collapses one text item to the string', () => {
    expect(toModelResult('fs', 'read', { content: [{ type: 'text', text: 'hello' }] })).toBe('hello');
  });

  it('reads structured content instead of the text that repeats it', () => {
    const raw = { content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } };
    expect(toModelResult('fs', 'read', raw)).toEqual({ a: 1 });
  });

  it('describes images, audio, resources and links without their bytes', () => {
    const raw = {
      content: [
        { type: 'text', text: 'see' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'audio', mimeType: 'audio/wav', data: 'AAAAAAAA' },
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'abc' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA' } },
        { type: 'resource_link', uri: 'file:///c', name: 'c' },
      ],
    };
    expect(toModelResult('fs', 'read', raw)).toEqual({
      content: [
        { type: 'text', text: 'see' },
        { type: 'image', mime_type: 'image/png', bytes: 3 },
        { type: 'audio', mime_type: 'audio/wav', bytes: 6 },
        { type: 'resource', uri: 'file:///a.txt', mime_type: 'text/plain', text: 'abc' },
        { type: 'resource', uri: 'file:///b.bin', bytes: 3 },
        { type: 'resource_link', uri: 'file:///c', name: 'c' },
      ],
    });
  });

  it('turns isError into an execution_error carrying the text', () => {
    expect(() =>
      toModelResult('fs', 'read', { isError: true, content: [{ type: 'text', text: 'Access denied' }] }),
    ).toThrow(
      expect.objectContaining({
        kind: 'execution_error',
        message: 'server "fs": tool "read" reported an error: Access denied',
      }),
    );
  });

  it('answers no content as no_result', () => {
    expect(isNoResult(toModelResult('fs', 'read', { content: [] }))).toBe(true);
  });
});

describe('MCP protocol errors as platform kinds', () => {
  it.each([
    [{ code: -32602, message: 'bad' }, 'invalid_arguments'],
    [{ code: -32001, message: 'timed out' }, 'timeout'],
    [{ code: -32000, message: 'closed' }, 'transient'],
    [{ code: -32603, message: 'internal' }, 'execution_error'],
    [new TypeError('fetch failed'), 'transient'],
  ])('maps %o to %s', (err, kind) => {
    expect(callError('s', 't', err, undefined)).toMatchObject({
      kind,
      message: expect.stringMatching(/^server "s": tool "t": /),
    });
  });
});

describe('listed MCP tools', () => {
  const tool = {
    name: 'read',
    description: 'Reads.',
    inputSchema: { type: 'object', properties: { b: {}, a: {} } },
  };

  it('digests description, schema and annotations whatever their key order', () => {
    const reordered = {
      inputSchema: { properties: { a: {}, b: {} }, type: 'object' },
      description: 'Reads.',
      name: 'read',
    };
    expect(toolDigest(reordered)).toBe(toolDigest(tool));
    expect(toolDigest({ ...tool, description: 'Reads. Also mails your files.' })).not.toBe(toolDigest(tool));
    expect(toolDigest({ ...tool, annotations: { destructiveHint: false } })).not.toBe(toolDigest(tool));
  });

  it('refuses a name that cannot be mounted and a schema over the cap, naming the server and the tool', () => {
    expect(unmountable('fs', { ...tool, name: 'read file' })).toMatch(
      /^server "fs": tool "read file" has a name that cannot be mounted/,
    );
    const big = { type: 'object', properties: { x: { description: 'x'.repeat(40_000) } } };
    expect(unmountable('fs', { ...tool, inputSchema: big })).toMatch(
      /^server "fs": tool "read": inputSchema is \d+ characters, over the cap of 32000/,
    );
    expect(unmountable('fs', tool)).toBeUndefined();
  });
});

describe("an MCP tool's reach and shaping, as the configuration sets them", () => {
  const listed = (name: string) => ({
    name,
    description: 'A tool.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
  });
  const define = (server: Parameters<typeof mcpToolDefinition>[0], name: string) =>
    mcpToolDefinition(server, 'ext', listed(name), 'digest', async () => null);

  it("puts a server's tools in scope mcp:<server> unless the server or the tool names another", () => {
    expect(define({ name: 'fs', command: 'node' }, 'read').accessScope).toBe('mcp:fs');
    const server = {
      name: 'fs',
      command: 'node',
      access_scope: 'files.read',
      tools: {
        write: {
          access_scope: 'files.write',
          requires_grant: true,
          aliases: { city: { 成都: 'Chengdu' } },
          summarize_result: false,
          result_budget_chars: 900,
        },
      },
    };
    expect(define(server, 'read')).toMatchObject({ accessScope: 'files.read' });
    expect(define(server, 'read')).not.toHaveProperty('requiresGrant');
    expect(define(server, 'write')).toMatchObject({
      accessScope: 'files.write',
      requiresGrant: true,
      argumentAliases: { city: { 成都: 'Chengdu' } },
      summarizeResult: false,
      resultBudgetChars: 900,
    });
  });
});
