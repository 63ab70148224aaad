import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './processes.js';

const run = promisify(execFile);

/**
 * Runs `pnpm demo` (scripts/demo.ts) with llm-sim as the model (no OpenAI settings), on `prefix` and
 * writing to `outputs`, with `env` on top and `args` on its command line; resolves to what it printed.
 */
export async function runDemo(
  prefix: string,
  outputs: string,
  env: Record<string, string> = {},
  args: string[] = [],
): Promise<string> {
  const full: Record<string, string | undefined> = {
    ...process.env,
    AR_KEY_PREFIX: prefix,
    OUTPUTS_DIR: outputs,
    LOG_LEVEL: 'warn',
    ...env,
  };
  delete full.OPENAI_API_KEY;
  delete full.OPENAI_BASE_URL;
  const { stdout } = await run('node', ['--import', 'tsx', path.join(ROOT, 'scripts/demo.ts'), ...args], {
    cwd: ROOT,
    env: full,
    timeout: 60_000,
  });
  return stdout;
}
