import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/processes.js';
import { testRedis } from './helpers/redis.js';

const run = promisify(execFile);

describe('the workflow demo (pnpm demo:workflow)', () => {
  const t = testRedis();
  afterAll(async () => t.cleanup());

  it('runs the shipped workflow offline on llm-sim: weather and order in parallel, then a plan that uses both', async () => {
    const env: Record<string, string | undefined> = {
      ...process.env,
      AR_KEY_PREFIX: t.prefix,
      LOG_LEVEL: 'warn',
    };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    delete env.WORKFLOWS_FILE;
    const { stdout } = await run('node', ['--import', 'tsx', path.join(ROOT, 'scripts/demo-workflow.ts')], {
      cwd: ROOT,
      env,
      timeout: 60_000,
    });
    expect(stdout).toMatch(/POST \/v1\/workflows → (wf_\w+) \(trip_with_order_check\)/);
    expect(stdout).toMatch(/weather started as run wf_\w+\.weather \(agent trip_planner/);
    expect(stdout).toMatch(/order started as run wf_\w+\.order \(agent customer_service_agent/);
    expect(stdout).toMatch(/Outcome: succeeded \(completed\)/);
    expect(stdout).toMatch(/Weather: 上海周末天气：Saturday: 多云转晴 11–18°C/);
    expect(stdout).toMatch(/Order: 订单 ORD-123456 状态：\w+/);
  }, 90_000);
});
