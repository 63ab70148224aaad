import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDemo } from './helpers/demo.js';
import { testRedis } from './helpers/redis.js';

describe('the main job (pnpm demo)', () => {
  const t = testRedis();
  let outputs = '';
  let mcpOutputs = '';
  afterAll(async () => {
    await t.cleanup();
    for (const dir of [outputs, mcpOutputs]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs the example task through the HTTP API on llm-sim and writes the markdown file', async () => {
    outputs = await mkdtemp(path.join(tmpdir(), 'ar-demo-'));
    const stdout = await runDemo(t.prefix, outputs);
    expect(stdout).toMatch(/No model configured \(OPENAI_API_KEY is unset\): llm-sim/);
    expect(stdout).toMatch(/API: +http:\/\/127\.0\.0\.1:\d+/);
    expect(stdout).toMatch(/Docs: +http:\/\/127\.0\.0\.1:\d+\/docs/);
    expect(stdout).toMatch(/Bull Board: +http:\/\/127\.0\.0\.1:\d+\/admin\/queues/);
    expect(stdout).toMatch(/✓ query_weather \{"city":"上海"\} → ok/);
    expect(stdout).toMatch(/✓ write_markdown_file .* → ok/);
    expect(stdout).toMatch(/Outcome: succeeded \(final_answer\)/);
    const file = /Written file: (.+)$/m.exec(stdout)?.[1] ?? '';
    expect(path.dirname(file)).toBe(await import('node:fs/promises').then((fs) => fs.realpath(outputs)));
    const text = await readFile(file, 'utf8');
    expect(text).toMatch(/^# 上海周末两日游建议/);
    expect(text).toMatch(/Saturday: 多云转晴 11–18°C/);
  }, 90_000);

  it('with --mcp, has a second agent list and read the written plan through the reference MCP filesystem server sandboxed to the output folder', async () => {
    mcpOutputs = await mkdtemp(path.join(tmpdir(), 'ar-demo-mcp-'));
    // A file the server can only list if it serves this very folder.
    await writeFile(path.join(mcpOutputs, 'earlier-notes.md'), '# notes\n');
    const stdout = await runDemo(`${t.prefix}mcp`, mcpOutputs, {}, ['--mcp']);
    expect(stdout).toMatch(/MCP: the reference filesystem server over stdio, sandboxed to /);
    expect(stdout).toMatch(/✓ write_markdown_file .* → ok/);
    expect(stdout).toMatch(/\(outputs_reader\)/);
    expect(stdout).toMatch(/✓ fs__list_directory \{"path":"\."\} → ok/);
    expect(stdout).toMatch(/✓ fs__read_text_file \{"path":"shanghai-weekend-trip\.md","head":1\} → ok/);
    // The reader's answer is the last thing printed; the listing in it spans lines.
    const answer = stdout.slice(stdout.lastIndexOf('Answer: The output folder holds'));
    // What the server listed and read, as the model was handed it.
    expect(answer).toContain('[FILE] earlier-notes.md');
    expect(answer).toContain('[FILE] shanghai-weekend-trip.md');
    expect(answer).toContain('the plan starts with "# 上海周末两日游建议"');
    expect(stdout.match(/Outcome: succeeded \(final_answer\)/g)).toHaveLength(2);
  }, 90_000);
});
