import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/processes.js';
import { testRedis } from './helpers/redis.js';

const run = promisify(execFile);

describe('pnpm demo:handoff (the whole fleet offline on llm-sim)', () => {
  const t = testRedis();
  afterAll(async () => {
    await t.cleanup();
  });

  it('prints a triage → order_desk conversation whose second message goes on with order_desk', async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      AR_KEY_PREFIX: t.prefix,
      LOG_LEVEL: 'error',
    };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    delete env.AGENTS_FILE;
    const { stdout } = await run('node', ['--import', 'tsx', path.join(ROOT, 'scripts/demo-handoff.ts')], {
      cwd: ROOT,
      env,
      timeout: 60_000,
    });
    expect(stdout).toContain('triage hands the conversation to order_desk (kept all of it)');
    expect(stdout).toContain('order_desk calls query_order_status({"order_id":"ORD-123456"}) → ok');
    expect(stdout).toMatch(/^order_desk: Order ORD-123456 is \w+; you were charged once/m);
    expect(stdout).toContain('(the session goes on with order_desk, the agent that last answered)');
    expect(stdout).toMatch(/^order_desk: It was \w+ first and is \w+ now\.$/m);
  }, 90_000);
});
