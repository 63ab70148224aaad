import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const packageDir = fileURLToPath(new URL('..', import.meta.url));

/** Runs the CLI through tsx; `onLine` sees each stdout line as it comes. */
function runCli(
  args: string[],
  onLine: (line: string, signal: (s: NodeJS.Signals) => void) => void = () => {},
) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { cwd: packageDir });
  let stdout = '';
  let stderr = '';
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) onLine(line, (s) => child.kill(s));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('llm-sim CLI', () => {
  it('prints usage for --help and exits 0', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('Usage: tsx packages/llm-sim/src/main.ts');
    expect(stdout).toContain('--record FILE');
  });

  it('prints its URL, serves the shipped scenarios and exits 0 on SIGTERM', async () => {
    let models: string[] = [];
    const { code, stdout } = await runCli(['--port', '0'], (line, signal) => {
      const url = /listening on (\S+)/.exec(line)?.[1];
      if (url === undefined) return;
      fetch(`${url}/models`)
        .then((res) => res.json() as Promise<{ data: Array<{ id: string }> }>)
        .then((body) => {
          models = body.data.map((m) => m.id);
        })
        .finally(() => signal('SIGTERM'))
        .catch(() => {});
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(stdout).toContain('SIGTERM received');
    expect(models).toContain('weather-trip');
  });

  it('exits 1 naming the file and field when a scenario is invalid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llm-sim-cli-'));
    try {
      writeFileSync(join(dir, 'bad.yaml'), 'name: bad\nturns: nope\n');
      const { code, stderr } = await runCli(['--port', '0', '--scenarios', dir]);
      expect(code).toBe(1);
      expect(stderr).toContain(join(dir, 'bad.yaml'));
      expect(stderr).toContain('turns: must be an array');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
