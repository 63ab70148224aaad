import { spawn } from 'node:child_process';
import { link, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createWriteMarkdownFile } from '@agent-reach/executor';
import type { ToolContext, ToolDefinition } from '@agent-reach/protocol';
import { startPlatform } from './helpers/platform.js';

describe('write_markdown_file stays inside the outputs directory', () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  let outputs: string;
  let outside: string;
  beforeAll(async () => {
    outputs = await mkdtemp(path.join(tmpdir(), 'ar-out-'));
    outside = await mkdtemp(path.join(tmpdir(), 'ar-outside-'));
    await mkdir(path.join(outputs, 'sub'), { recursive: true });
    await symlink(outside, path.join(outputs, 'escape'));
    await symlink(path.join(outside, 'target.md'), path.join(outputs, 'link.md'));
    p = await startPlatform({ OUTPUTS_DIR: outputs });
  });
  afterAll(async () => {
    await p.close();
    await rm(outputs, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  it('writes a .md file under the outputs directory and returns its path', async () => {
    const r = await p.call('write_markdown_file', { path: 'trips/shanghai.md', content: '# 上海\n' });
    expect(r.ok).toBe(true);
    const c = r.content as { path: string; relative_path: string; bytes: number };
    expect(c.relative_path).toBe(path.join('trips', 'shanghai.md'));
    expect(await readFile(c.path, 'utf8')).toBe('# 上海\n');
  });

  const refused: Array<[string, string, RegExp]> = [
    ['a parent-directory escape', '../escaped.md', /"\.\." segments/],
    ['a nested parent-directory escape', 'sub/../../escaped.md', /"\.\." segments/],
    ['an absolute path', '/tmp/escaped.md', /not absolute/],
    ['a NUL byte', 'nul\u0000.md', /NUL bytes/],
    ['a file that is not markdown', 'notes.txt', /end in \.md/],
    ['a directory symlink leading outside', 'escape/escaped.md', /outside the outputs directory/],
    ['a file symlink', 'link.md', /symbolic link/],
  ];
  for (const [what, target, message] of refused) {
    it(`refuses ${what} as invalid_arguments on the path field`, async () => {
      const r = await p.call('write_markdown_file', { path: target, content: 'x' });
      expect(r.error).toMatchObject({ kind: 'invalid_arguments', field: '/path' });
      expect(r.error?.message).toMatch(message);
      await expect(readFile(path.join(outside, 'escaped.md'), 'utf8')).rejects.toThrow();
      await expect(readFile(path.join(outside, 'target.md'), 'utf8')).rejects.toThrow();
    });
  }
});

/** Every file and folder under `dir`, relative to it. */
async function everything(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.map(String).sort();
}

// Swaps `dir` between a real folder and a symbolic link to `outside` as fast as it can, in its own process.
const SWAPPER = `
const fs = require('node:fs');
const [dir, realStash, linkStash] = process.argv.slice(1);
const deadline = Date.now() + 120000;
const exists = (p) => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
const attempt = (f) => { try { f(); } catch {} };
process.send('ready');
while (Date.now() < deadline) {
  const st = fs.lstatSync(dir, { throwIfNoEntry: false });
  if (st === undefined) {
    attempt(() => fs.renameSync(exists(realStash) ? realStash : linkStash, dir));
  } else if (st.isSymbolicLink()) {
    attempt(() => fs.renameSync(dir, linkStash));
    attempt(() => fs.renameSync(realStash, dir));
  } else if (exists(realStash)) {
    attempt(() => fs.rmSync(dir, { recursive: true, force: true }));
  } else {
    attempt(() => fs.renameSync(dir, realStash));
    attempt(() => fs.renameSync(linkStash, dir));
  }
}
`;

describe('write_markdown_file cannot be raced or linked out of the outputs directory', () => {
  let outputs: string;
  let outside: string;
  let stash: string;
  const ctx = { signal: new AbortController().signal } as ToolContext;
  const call = (tool: ToolDefinition, relative: string, content: string) =>
    (tool.handler as (a: unknown, c: ToolContext) => Promise<{ path: string }>)(
      { path: relative, content },
      ctx,
    );
  const write = (relative: string, content: string) =>
    call(createWriteMarkdownFile(outputs), relative, content);

  beforeEach(async () => {
    outputs = await mkdtemp(path.join(tmpdir(), 'ar-out-'));
    outside = await mkdtemp(path.join(tmpdir(), 'ar-outside-'));
    stash = await mkdtemp(path.join(tmpdir(), 'ar-stash-'));
  });
  afterEach(async () => {
    for (const dir of [outputs, outside, stash]) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Makes `count` calls writing `pathOf(i)`, a few in flight at once like an executor's concurrency,
   * while another process keeps swapping `outputs/race` for a symbolic link to `outside`, its real
   * folder stashed in `stashDir`. Returns the paths written and how many calls ended each way.
   */
  async function raceWrites(stashDir: string, count: number, pathOf: (i: number) => string) {
    const dir = path.join(outputs, 'race');
    await mkdir(dir);
    await mkdir(stashDir, { recursive: true });
    await symlink(outside, path.join(stashDir, 'link'));
    const swapper = spawn(
      process.execPath,
      ['-e', SWAPPER, dir, path.join(stashDir, 'real'), path.join(stashDir, 'link')],
      { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
    );
    const exited = new Promise((resolve) => swapper.once('exit', resolve));
    const tool = createWriteMarkdownFile(outputs);
    const written: string[] = [];
    const outcomes = new Map<string, number>();
    try {
      await new Promise((resolve) => swapper.once('message', resolve));
      const calls = Array.from({ length: count }, (_, i) => i);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = calls.shift(); i !== undefined; i = calls.shift()) {
            const outcome = await call(tool, pathOf(i), `# ${i}\n`).then(
              (r) => {
                written.push(r.path);
                return 'written';
              },
              (err: { kind?: string; code?: string }) => err.kind ?? err.code ?? 'thrown',
            );
            outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          }
        }),
      );
    } finally {
      swapper.kill();
      await exited;
    }
    return { written, outcomes };
  }

  it('writes nothing outside over 2 000 calls while a folder is swapped for a symbolic link', async () => {
    const { outcomes } = await raceWrites(stash, 2_000, (i) => `race/file-${i}.md`);
    expect(await everything(outside)).toEqual([]);
    // Both branches ran, and every refusal was a clean invalid_arguments.
    expect([...outcomes.keys()].sort()).toEqual(['invalid_arguments', 'written']);
  }, 120_000);

  it('creates no folder outside over 3 000 calls making nested folders while their parent is swapped for a symbolic link', async () => {
    // The real folder is stashed inside the outputs directory: only the link leads outside.
    const { written, outcomes } = await raceWrites(
      path.join(outputs, '.swap'),
      3_000,
      (i) => `race/folder-${i}/deeper/plan.md`,
    );
    expect(await everything(outside)).toEqual([]);
    const root = await realpath(outputs);
    expect(written.filter((p) => !p.startsWith(root + path.sep))).toEqual([]);
    expect([...outcomes.keys()].sort()).toEqual(['invalid_arguments', 'written']);
  }, 180_000);

  it('refuses to replace a file hard-linked from outside and leaves that file as it was', async () => {
    await writeFile(path.join(outside, 'victim.md'), 'original\n');
    await link(path.join(outside, 'victim.md'), path.join(outputs, 'shared.md'));
    await expect(write('shared.md', 'overwritten\n')).rejects.toMatchObject({
      kind: 'invalid_arguments',
      field: '/path',
      message: expect.stringMatching(/other hard links/),
    });
    expect(await readFile(path.join(outside, 'victim.md'), 'utf8')).toBe('original\n');
  });

  it('creates no folder outside when a subfolder on the path is a symbolic link', async () => {
    await symlink(outside, path.join(outputs, 'escape'));
    await expect(write('escape/new/deeper/plan.md', 'x')).rejects.toMatchObject({
      kind: 'invalid_arguments',
      message: expect.stringMatching(/outside the outputs directory/),
    });
    expect(await everything(outside)).toEqual([]);
    expect(await everything(outputs)).toEqual(['escape']);
  });

  it('lets every one of eight writes of one new path at the same moment succeed, leaving one of them whole and nothing else', async () => {
    // Lengths differ, so a file mixing two writes (one cut short by another) cannot pass for either.
    const contents = Array.from(
      { length: 8 },
      (_, i) => `# writer ${i}\n${`line ${i}\n`.repeat(200 * (i + 1))}`,
    );
    for (let round = 0; round < 25; round += 1) {
      const relative = `same/round-${round}/plan.md`;
      const written = await Promise.all(contents.map((c) => write(relative, c)));
      expect(new Set(written.map((w) => w.path)).size).toBe(1);
      expect(contents).toContain(await readFile(written[0]!.path, 'utf8'));
    }
    const files = (await everything(outputs)).filter((p) => p.endsWith('.md') || p.endsWith('.tmp'));
    expect(files).toEqual(
      Array.from({ length: 25 }, (_, r) => path.join('same', `round-${r}`, 'plan.md')).sort(),
    );
  });

  it('lets writes of one existing path at the same moment all succeed, the file always whole', async () => {
    await write('busy.md', 'first\n');
    const contents = Array.from({ length: 6 }, (_, i) => `# ${i}\n${'x'.repeat(50_000 * (i + 1))}\n`);
    for (let round = 0; round < 10; round += 1) {
      const reads: Promise<string>[] = [];
      const writes = contents.map(async (c) => {
        const w = await write('busy.md', c);
        reads.push(readFile(w.path, 'utf8'));
        return w;
      });
      await Promise.all(writes);
      // Whatever a reader saw at any point was one complete write.
      for (const seen of await Promise.all(reads)) expect(contents).toContain(seen);
    }
    expect(await everything(outputs)).toEqual(['busy.md']);
  });

  it('replaces an existing file of its own and leaves nothing else behind', async () => {
    await write('notes/plan.md', 'first\n');
    const written = await write('notes/plan.md', 'second\n');
    expect(await readFile(written.path, 'utf8')).toBe('second\n');
    expect(await everything(outputs)).toEqual(['notes', path.join('notes', 'plan.md')]);
  });
});
