import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolResult } from '@agent-reach/protocol';
import { ROOT } from './processes.js';
import { waitFor } from './redis.js';
import type { startRunsHarness } from './runs.js';

/** The reference servers, run from their installed packages (nothing is downloaded at test time). */
export const FILESYSTEM_SERVER = path.join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
);
export const EVERYTHING_SERVER = path.join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
export const MCP_FIXTURES = path.join(ROOT, 'test/fixtures/mcp');

/** A fresh temporary folder. */
export function tempDir(label: string): string {
  return mkdtempSync(path.join(tmpdir(), `agent-reach-${label}-`));
}

/** Writes a configuration document (JSON is YAML) to a temporary agents file and returns its path. */
export function writeAgentsFile(document: unknown): string {
  const file = path.join(tempDir('agents'), 'agents.yaml');
  writeFileSync(file, JSON.stringify(document, null, 2));
  return file;
}

/** A TCP port free now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A server process of a test: started, waited on until it listens, killed at the end. */
export interface ServerProcess {
  proc: ChildProcess;
  url: string;
  output(): string;
  kill(): Promise<void>;
}

/** Starts the reference "everything" server in its streamable HTTP mode on `port`. */
export async function startEverythingHttp(port: number): Promise<ServerProcess> {
  return startListening(EVERYTHING_SERVER, ['streamableHttp'], port, /listening on port/);
}

/** Starts a fixture MCP server in streamable HTTP mode on `port` (it prints `listening` when ready). */
export async function startFixtureHttp(fixture: string, port: number): Promise<ServerProcess> {
  return startListening(path.join(MCP_FIXTURES, fixture), ['--http', String(port)], port, /listening/);
}

async function startListening(
  script: string,
  args: string[],
  port: number,
  ready: RegExp,
): Promise<ServerProcess> {
  const proc = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  await waitFor(
    () => ready.test(out) || proc.exitCode !== null,
    20_000,
    `${path.basename(script)} listening`,
  );
  if (proc.exitCode !== null) throw new Error(`${script} exited before listening:\n${out}`);
  return {
    proc,
    url: `http://127.0.0.1:${port}/mcp`,
    output: () => out,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

type Harness = Awaited<ReturnType<typeof startRunsHarness>>;

/** Waits until the fleet announces every one of `tools` and the harness's scheduler has them in its catalog. */
export async function untilOffered(h: Harness, tools: string[], timeoutMs = 20_000): Promise<void> {
  await waitFor(
    async () => {
      const catalog = await h.schedulers[0]!.runner.catalog.refresh();
      return tools.every((t) => catalog.has(t));
    },
    timeoutMs,
    `tools ${tools.join(', ')} offered`,
  );
}

/** The tool results a run recorded, in order. */
export async function recordedResults(h: Harness, runId: string): Promise<ToolResult[]> {
  const raw = await h.redis.hgetall(h.keys.results(runId));
  return Object.values(raw).map((json) => JSON.parse(json) as ToolResult);
}
