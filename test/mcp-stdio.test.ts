import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolMessages } from './helpers/loop.js';
import { FILESYSTEM_SERVER, tempDir, untilOffered, writeAgentsFile } from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness } from './helpers/runs.js';

const FS_TOOLS = ['fs__list_directory', 'fs__read_text_file', 'fs__write_file', 'fs__create_directory'];

describe('an MCP server over stdio as a tool source (the reference filesystem server)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const root = tempDir('mcp-fs');
  const outside = tempDir('mcp-outside');
  writeFileSync(path.join(root, 'notes.txt'), 'the meeting moved to Thursday');
  writeFileSync(path.join(outside, 'secret.txt'), 'not for agents');

  beforeAll(async () => {
    const agents = writeAgentsFile({
      agents: [
        { name: 'test_agent', tools: ['query_weather'] },
        { name: 'files_agent', tools: FS_TOOLS },
      ],
      tool_groups: {
        default: {
          mcp_servers: [
            {
              name: 'fs',
              command: process.execPath,
              args: [FILESYSTEM_SERVER, root],
              // get_file_info is mounted but no agent names it: offering a tool grants nothing.
              allow: ['list_directory', 'read_text_file', 'write_file', 'create_directory', 'get_file_info'],
              tools: { create_directory: { requires_confirmation: true, timeout_ms: 4000 } },
            },
          ],
        },
      },
    });
    h = await startRunsHarness({ AGENTS_FILE: agents });
    await untilOffered(h, [...FS_TOOLS, 'fs__get_file_info']);
  }, 60_000);
  afterAll(async () => h?.close());

  const run = async (model: string, input: string) => {
    const runId = await h.control.start({ agent: 'files_agent', input, model });
    return { runId, outcome: await h.control.wait(runId, 30_000) };
  };

  it('lets an agent list a folder and read a file through the server, the model reading the text', async () => {
    h.sim.addScenario({
      name: 'fs-list-read',
      turns: [
        { tool_calls: [{ name: 'fs__list_directory', arguments: { path: root } }] },
        { tool_calls: [{ name: 'fs__read_text_file', arguments: { path: path.join(root, 'notes.txt') } }] },
        { content: 'read: {{ last.content.content }}' },
      ],
    });
    const { outcome } = await run('fs-list-read', 'what do my notes say?');
    expect(outcome).toMatchObject({
      status: 'succeeded',
      answer: 'read: the meeting moved to Thursday',
    });
    const last = h.sim.requests.filter((r) => r.scenario === 'fs-list-read').at(-1);
    const [listed] = toolMessages(last!.body as never);
    // Structured content beside a text that repeats it: the model reads the object.
    expect(listed?.result).toMatchObject({ ok: true, content: { content: '[FILE] notes.txt' } });
    const offered = h.sim.requests.find((r) => r.scenario === 'fs-list-read')?.body as {
      tools?: Array<{ function: { name: string } }>;
    };
    // The model sees the tools its agent names, not every tool the server offers.
    expect(offered.tools?.map((t) => t.function.name).sort()).toEqual([...FS_TOOLS].sort());
  });

  it('hands the model a structured error when the server refuses a path outside its folder', async () => {
    h.sim.addScenario({
      name: 'fs-outside',
      turns: [
        {
          tool_calls: [{ name: 'fs__read_text_file', arguments: { path: path.join(outside, 'secret.txt') } }],
        },
        { content: 'refused: {{ last.error.kind }}' },
      ],
    });
    const { outcome } = await run('fs-outside', 'read the secret');
    expect(outcome.answer).toBe('refused: execution_error');
    const second = h.sim.requests.filter((r) => r.scenario === 'fs-outside').at(-1);
    const result = toolMessages(second!.body as never)[0]?.result;
    expect(result).toMatchObject({
      ok: false,
      error: {
        kind: 'execution_error',
        retryable: false,
        message: expect.stringMatching(/server "fs": tool "read_text_file" reported an error: Access denied/),
      },
    });
    expect(JSON.stringify(result)).not.toContain('not for agents');
  });

  it('refuses arguments that do not match the server schema before calling it, with the field named', async () => {
    h.sim.addScenario({
      name: 'fs-bad-args',
      turns: [
        { tool_calls: [{ name: 'fs__read_text_file', arguments: { path: 42 } }] },
        { content: '{{ last.error.kind }} at {{ last.error.field }}' },
      ],
    });
    const { outcome } = await run('fs-bad-args', 'read something oddly');
    expect(outcome.answer).toBe('invalid_arguments at /path');
  });

  it('announces annotations as policy: read-only tools may be re-run, destructive ones need approval', async () => {
    const catalog = await h.schedulers[0]!.runner.catalog.refresh();
    expect(catalog.get('fs__read_text_file')).toMatchObject({
      readOnly: true,
      idempotent: true,
      requiresConfirmation: false,
      origin: {
        kind: 'mcp',
        server: 'fs',
        tool: 'read_text_file',
        digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    });
    expect(catalog.get('fs__write_file')).toMatchObject({ readOnly: false, requiresConfirmation: true });
    // Configured, against the server's own destructiveHint: false.
    expect(catalog.get('fs__create_directory')).toMatchObject({
      requiresConfirmation: true,
      timeoutMs: 4000,
    });
    // Not in the allow list: never mounted.
    expect(catalog.has('fs__move_file')).toBe(false);
  });

  it('parks a destructive MCP tool call for approval and runs it on the server once approved', async () => {
    const target = path.join(root, 'approved.txt');
    h.sim.addScenario({
      name: 'fs-write',
      turns: [
        {
          tool_calls: [
            { name: 'fs__write_file', arguments: { path: target, content: 'written after approval' } },
          ],
        },
        { content: 'wrote: {{ last.ok }}' },
      ],
    });
    const runId = await h.control.start({ agent: 'files_agent', input: 'write the file', model: 'fs-write' });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'awaiting_approval',
      15_000,
      'parked',
    );
    expect(existsSync(target)).toBe(false);
    const [pending] = Object.values((await h.control.get(runId))?.state?.approvals ?? {});
    expect(pending).toMatchObject({ tool: 'fs__write_file' });
    await h.control.decide({ runId, toolCallId: pending!.toolCallId, decision: 'approved', by: 'alice' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'wrote: true' });
    expect(readFileSync(target, 'utf8')).toBe('written after approval');
  });
});
