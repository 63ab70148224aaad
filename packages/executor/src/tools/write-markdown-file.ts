import { constants as fsc } from 'node:fs';
import { lstat, mkdir, open, realpath } from 'node:fs/promises';
import path from 'node:path';
import { defineTool, ToolError, Type, type ToolDefinition } from '@agent-reach/shared';

const refuse = (message: string) => new ToolError('invalid_arguments', message, { field: '/path' });

/** Resolves `relative` inside `root`, refusing every way out: `..`, absolute paths, NUL bytes, symlinks. */
export async function resolveInside(root: string, relative: string): Promise<string> {
  if (relative.includes('\0')) throw refuse('path must not contain NUL bytes');
  if (path.isAbsolute(relative) || /^[a-zA-Z]:/.test(relative) || relative.startsWith('\\')) {
    throw refuse('path must be relative to the outputs directory, not absolute');
  }
  const parts = relative.split(/[\\/]+/);
  if (parts.some((p) => p === '..')) throw refuse('path must not contain ".." segments');
  if (!relative.toLowerCase().endsWith('.md')) throw refuse('path must end in .md');
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  const target = path.resolve(realRoot, relative);
  const parent = path.dirname(target);
  await mkdir(parent, { recursive: true });
  // A symlinked directory inside the root could point anywhere: compare real paths.
  const realParent = await realpath(parent);
  if (realParent !== realRoot && !realParent.startsWith(realRoot + path.sep)) {
    throw refuse('path leads outside the outputs directory (through a symbolic link)');
  }
  const existing = await lstat(target).catch(() => undefined);
  if (existing?.isSymbolicLink()) throw refuse('path is a symbolic link; refusing to write through it');
  if (existing && !existing.isFile()) throw refuse('path exists and is not a regular file');
  return path.join(realParent, path.basename(target));
}

/** Writes a markdown file inside the configured outputs directory and nowhere else. */
export function createWriteMarkdownFile(outputsDir: string): ToolDefinition {
  return defineTool({
    name: 'write_markdown_file',
    description:
      'Write a markdown document to a file in the outputs directory and return its path. The path is relative ' +
      '(e.g. "trips/shanghai-weekend.md"), must end in .md and cannot leave the outputs directory. Overwrites an ' +
      'existing file of the same name. Does not read or list files.',
    parameters: Type.Object(
      {
        path: Type.String({ minLength: 4, maxLength: 200, examples: ['shanghai-weekend-trip.md'] }),
        content: Type.String({ minLength: 1, maxLength: 200_000, description: 'The markdown text.' }),
      },
      { additionalProperties: false },
    ),
    timeoutMs: 5000,
    retry: { maxAttempts: 2 },
    accessScope: 'filesystem_outputs',
    handler: async ({ path: relative, content }) => {
      const target = await resolveInside(outputsDir, relative);
      // O_NOFOLLOW: a symlink swapped in after the check still cannot be written through.
      const handle = await open(target, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW, 0o644);
      try {
        await handle.writeFile(content, 'utf8');
      } finally {
        await handle.close();
      }
      return {
        path: target,
        relative_path: path.relative(await realpath(outputsDir), target),
        bytes: Buffer.byteLength(content),
      };
    },
  });
}
