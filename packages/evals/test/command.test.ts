import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { evalCommand, EVAL_EXIT, parseVariants, quotaFetch, retryAfterMs } from '../src/index.js';

async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await evalCommand(args, env, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('the eval command before it reaches the platform', () => {
  it('names every problem of a bad dataset with exit 2, with or without an API key', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'eval-cmd-'));
    const file = path.join(dir, 'bad.jsonl');
    await writeFile(file, '{"id":"a","input":"x","agent":"a","expect":{"status":"done"}}\n');
    const res = await run([file]);
    expect(res.code).toBe(EVAL_EXIT.badInput);
    expect(res.stderr).toBe(
      `problem: ${file}: case "a" (line 1): expect.status: must be equal to one of the allowed values (succeeded, not_converged, failed, cancelled, awaiting_approval)`,
    );
    const good = path.join(dir, 'good.jsonl');
    await writeFile(good, '{"id":"a","input":"x","agent":"a"}\n');
    expect((await run([good])).stderr).toBe('problem: no API key: set AGENT_REACH_KEY (or --api-key)');
  });

  it('refuses bad flags with exit 2 naming them, and prints its usage with --help', async () => {
    expect(await run(['x.yaml', '--repeat', '0'])).toMatchObject({
      code: 2,
      stderr: 'problem: --repeat must be an integer from 1 to 1000, got "0"',
    });
    expect((await run(['x.yaml', '--format', 'html'])).stderr).toBe(
      'problem: --format must be one of table, markdown, json, junit, got "html"',
    );
    expect((await run(['x.yaml', '--bogus'])).stderr).toMatch(/^usage error: Unknown option '--bogus'/);
    expect((await run(['x.yaml', '--max-regression', 'reach_success=0.1'])).stderr).toBe(
      'problem: --max-regression needs two variants or more (the first is the baseline)',
    );
    expect((await run(['--from-runs', 'agent=a&colour=blue'], { AGENT_REACH_KEY: 'k' })).stderr).toBe(
      'problem: --from-runs: unknown filter "colour"; use agent, status, since, until, metadata, trace_id, tool, error_kind, limit',
    );
    expect((await run(['--from-runs', 'since=yesterday'], { AGENT_REACH_KEY: 'k' })).stderr).toBe(
      'problem: --from-runs: since must be an ISO date or epoch ms, got "yesterday"',
    );
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: agent-reach eval DATASET/);
  });

  it('reads variants as JSON or a file, baseline by default, names unique', async () => {
    expect(await parseVariants([])).toEqual([{ name: 'baseline', overrides: {} }]);
    const dir = await mkdtemp(path.join(tmpdir(), 'eval-var-'));
    const file = path.join(dir, 'aliases.yaml');
    await writeFile(file, 'tools:\n  query_weather:\n    aliases: { city: { 广州省: 广州 } }\n');
    expect(await parseVariants(['base', `aliases=${file}`, 'fast={"max_iterations":3}'])).toEqual([
      { name: 'base', overrides: {} },
      { name: 'aliases', overrides: { tools: { query_weather: { aliases: { city: { 广州省: '广州' } } } } } },
      { name: 'fast', overrides: { max_iterations: 3 } },
    ]);
    await expect(parseVariants(['a', 'a'])).rejects.toThrow('--variant a: given twice');
    await expect(parseVariants(['x={oops'])).rejects.toThrow(/--variant x: the overrides are not JSON/);
    await expect(parseVariants(['x=[1]'])).rejects.toThrow(/cannot read \[1\]/);
    await expect(parseVariants(['bad name={}'])).rejects.toThrow(/the name must be 1-64/);
  });
});

describe('waiting out 429s', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(61_000).toUTCString(), 1_000)).toBe(60_000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });

  it('retries a 429 until it is answered otherwise, the body sent again each time', async () => {
    const bodies: string[] = [];
    const waits: number[] = [];
    const answers = [
      new Response('{}', { status: 429, headers: { 'retry-after': '0' } }),
      new Response('{}', { status: 429 }),
      new Response('{"ok":true}', { status: 201 }),
    ];
    const inner = (async (_url: unknown, init?: RequestInit) => {
      bodies.push(String(init?.body));
      return answers.shift()!;
    }) as typeof fetch;
    const res = await quotaFetch(inner, (ms) => waits.push(ms))('http://x/v1/runs', {
      method: 'POST',
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(bodies).toEqual(['{"a":1}', '{"a":1}', '{"a":1}']);
    expect(waits).toEqual([100, 1000]);
  });
});
