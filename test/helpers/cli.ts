import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { childEnv, cliArgs } from './node-run.js';

const run = promisify(execFile);

/**
 * Runs the CLI as a process of its own with `env` over this process's environment (its built JavaScript
 * when fresh, see node-run.ts); never throws.
 */
export async function runCli(
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('node', cliArgs(args), {
      env: { ...process.env, LOG_LEVEL: 'warn', ...childEnv(env) },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
