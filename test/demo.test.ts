import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runDemo } from './helpers/demo.js';
import { testRedis } from './helpers/redis.js';

describe('the main job (pnpm demo)', () => {
  const t = testRedis();
  let outputs = '';
  afterAll(async () => {
    await t.cleanup();
    if (outputs) await rm(outputs, { recursive: true, force: true });
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
});
