import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
