import { constants as fsc, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readlink, realpath, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { defineTool, ToolError, Type, type ToolDefinition } from '@agent-reach/protocol';

const refuse = (message: string) => new ToolError('invalid_arguments', message, { field: '/path' });
const THROUGH_LINK = 'path leads outside the outputs directory (through a symbolic link)';
const MOVED = 'a folder on the path was replaced while writing; nothing was written';

const isInside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);
const lstatOrNone = (p: string) =>
  lstat(p).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });

/** Splits a relative path into folders and file name, refusing `..`, absolute paths, NUL bytes and non-.md names. */
function splitPath(relative: string): { folders: string[]; name: string } {
  if (relative.includes('\0')) throw refuse('path must not contain NUL bytes');
  if (path.isAbsolute(relative) || /^[a-zA-Z]:/.test(relative) || relative.startsWith('\\')) {
    throw refuse('path must be relative to the outputs directory, not absolute');
  }
  const parts = relative.split(/[\\/]+/).filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw refuse('path must not contain ".." segments');
  const name = parts.pop();
  if (name === undefined || !name.toLowerCase().endsWith('.md')) throw refuse('path must end in .md');
  return { folders: parts, name };
}

/**
 * Walks (and creates) the folders one at a time from the real root by path, refusing any that is a
 * symbolic link or not a folder before going further. Used to check a path, and to write where the
 * system has no /proc/self/fd (a link swapped in between a check and a mkdir can then still receive an
 * empty folder). Returns the folder's path.
 */
async function openFolders(realRoot: string, folders: string[], create: boolean): Promise<string> {
  let dir = realRoot;
  for (const [i, folder] of folders.entries()) {
    const next = path.join(dir, folder);
    let st = await lstatOrNone(next);
    if (st === undefined && !create) return path.join(dir, ...folders.slice(i));
    if (st === undefined) {
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      // A parent swapped for a link since its check: stop before going deeper through it.
      if ((await realpath(dir)) !== dir) throw refuse(THROUGH_LINK);
      st = await lstat(next);
    }
    if (st.isSymbolicLink()) throw refuse(THROUGH_LINK);
    if (!st.isDirectory()) throw refuse(`"${folder}" on the path exists and is not a folder`);
    dir = next;
  }
  return dir;
}

/** Where an open file or folder really is, as Linux names it under /proc. */
const whereIs = (handle: FileHandle) => readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);

/** Where an open file really is: Linux names it under /proc; elsewhere, the entry in `dir` holding it. */
async function locate(
  handle: FileHandle,
  held: Stats,
  dir: string,
  name: string,
): Promise<string | undefined> {
  const named = await whereIs(handle);
  const candidates = named === undefined ? [path.join(await realpath(dir), name)] : [named];
  for (const p of candidates) {
    const st = await lstatOrNone(p);
    if (st && st.ino === held.ino && st.dev === held.dev) return p;
  }
  return undefined;
}

function checkTarget(st: Stats | undefined): void {
  if (st === undefined) return;
  if (st.isSymbolicLink()) throw refuse('path is a symbolic link; refusing to write through it');
  if (!st.isFile()) throw refuse('path exists and is not a regular file');
  if (st.nlink > 1) throw refuse('path is a file with other hard links; refusing to write to a shared file');
}

// O_EXCL|O_NOFOLLOW: a new file of our own, never through a link; O_NONBLOCK: a FIFO never hangs.
const OPEN_NEW = fsc.O_WRONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | fsc.O_CREAT | fsc.O_EXCL;
const OPEN_FOLDER = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW;

/** Linux names every open descriptor under /proc/self/fd; a path through it reaches the open folder itself. */
const hasProcFds = lstat('/proc/self/fd').then(
  (st) => st.isDirectory(),
  () => false,
);

/** The entry `name` in the open folder `dir`, reached through the folder itself rather than its path. */
const inFolder = (dir: FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

/** Opens `name` in the open folder `dir` as a folder, refusing a link or a non-folder there. */
async function openChild(dir: FileHandle, name: string): Promise<FileHandle> {
  return await open(inFolder(dir, name), OPEN_FOLDER).catch(async (err: NodeJS.ErrnoException) => {
    // O_DIRECTORY|O_NOFOLLOW fails with ENOTDIR on a link too: tell the two apart for the model.
    if (err.code !== 'ENOTDIR' && err.code !== 'ELOOP') throw err;
    const st = await lstatOrNone(inFolder(dir, name));
    if (st?.isSymbolicLink() === true) throw refuse(THROUGH_LINK);
    if (st !== undefined && !st.isDirectory())
      throw refuse(`"${name}" on the path exists and is not a folder`);
    throw err;
  });
}

/**
 * Opens (and creates) the folders one at a time from the real root, each created and opened inside the
 * folder opened before it, never through its path: a parent swapped for a link after it was opened can
 * only ever send the walk to the folder it already holds, so nothing is created behind a link. A folder
 * found moved out of the root is not created in. Returns the innermost folder, open.
 */
async function openFoldersAt(realRoot: string, folders: string[]): Promise<FileHandle> {
  let dir = await open(realRoot, OPEN_FOLDER);
  try {
    for (const folder of folders) {
      const where = await whereIs(dir);
      if (where === undefined || !isInside(realRoot, where)) throw refuse(MOVED);
      const child = await openChild(dir, folder).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
        await mkdir(inFolder(dir, folder)).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
        return await openChild(dir, folder);
      });
      await dir.close();
      dir = child;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

/**
 * Writes `content` to `relative` inside `root` without following a link at any component: folders are
 * created one at a time, each inside the folder opened before it (on Linux; elsewhere each checked before
 * the next); the content is written to a temporary file beside the target, opened without following a
 * link, and only once that file is shown to be really inside the root is it renamed over the target (a
 * regular file with no other hard link, or nothing). A file created outside by a folder swapped for a link
 * mid-way is removed again. Concurrent writes of one path all succeed; the last complete one stays.
 * Returns the file's real path.
 */
export async function writeInside(root: string, relative: string, content: string): Promise<string> {
  const { folders, name } = splitPath(relative);
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  return await writeChecked(realRoot, folders, name, content).catch((err: NodeJS.ErrnoException) => {
    // A folder vanishing or turning into a file or link mid-way (or one put at the target) is the same
    // race as a swapped link.
    throw err.code !== undefined && RACE_CODES.has(err.code) ? refuse(MOVED) : err;
  });
}

const RACE_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EEXIST', 'ENXIO', 'EISDIR']);

async function writeChecked(
  realRoot: string,
  folders: string[],
  name: string,
  content: string,
): Promise<string> {
  if (!(await hasProcFds))
    return await writeInFolder(realRoot, await openFolders(realRoot, folders, true), name, content);
  const dir = await openFoldersAt(realRoot, folders);
  try {
    return await writeInFolder(realRoot, inFolder(dir, ''), name, content);
  } finally {
    await dir.close();
  }
}

/**
 * Writes `name` in `dir` as a whole: the content goes to a fresh temporary file beside it (created
 * exclusively, never through a link), shown to be really inside the root, then renamed over `name`. A
 * rename is atomic, so readers see the old file or the new one, never a mix, and two writers of one path
 * both succeed: the last rename wins with a complete file. The target is checked before and just before
 * the rename: a link, a folder or a file with other hard links there is refused, never replaced.
 */
async function writeInFolder(realRoot: string, dir: string, name: string, content: string): Promise<string> {
  const target = path.join(dir, name);
  checkTarget(await lstatOrNone(target));
  const tempName = `.${name}.${randomBytes(6).toString('hex')}.tmp`;
  const temp = path.join(dir, tempName);
  const handle = await open(temp, OPEN_NEW, 0o644);
  let where: string | undefined;
  let renamed = false;
  try {
    const held = await handle.stat();
    where = await locate(handle, held, dir, tempName).catch(() => undefined);
    if (where === undefined || !isInside(realRoot, where)) throw refuse(MOVED);
    await handle.writeFile(content, 'utf8');
    // On disk before it takes the name: a crash leaves the old file or the new one, never a torn one.
    await handle.datasync();
    checkTarget(await lstatOrNone(target));
    await rename(temp, target);
    renamed = true;
    return path.join(path.dirname(where), name);
  } finally {
    await handle.close();
    // A temporary file that did not take the name is removed, wherever its folder went meanwhile.
    if (!renamed) await unlink(where ?? temp).catch(() => undefined);
  }
}

/**
 * Where `relative` would be written inside `root`, checked without creating anything: the same refusals
 * as `writeInside` for the path's text and for links among what already exists. Only a check: the
 * answer can be changed under the caller, so write with `writeInside`.
 */
export async function resolveInside(root: string, relative: string): Promise<string> {
  const { folders, name } = splitPath(relative);
  const dir = await openFolders(await realpath(root), folders, false);
  const target = path.join(dir, name);
  checkTarget(await lstatOrNone(target));
  return target;
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
      const written = await writeInside(outputsDir, relative, content);
      return {
        path: written,
        relative_path: path.relative(await realpath(outputsDir), written),
        bytes: Buffer.byteLength(content),
      };
    },
  });
}
