import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (the fault harness runs in a checkout: it starts the workspace's packages). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * The export condition under which the workspace packages resolve to their built JavaScript (see the
 * `exports` of each packages/*\/package.json): without it they resolve to their TypeScript sources.
 */
export const DIST_CONDITION = 'agent-reach-dist';

function newest(dir: string, skip: (file: string) => boolean): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (!skip(file)) latest = Math.max(latest, statSync(file).mtimeMs);
  }
  return latest;
}

let fresh: boolean | undefined;

/** Whether a package is compiled into a dist/ at all: packages/testing, helpers of the tests only, is not. */
function hasBuild(name: string): boolean {
  const file = path.join(ROOT, 'packages', name, 'package.json');
  if (!existsSync(file)) return false;
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as { scripts?: Record<string, string> };
  return manifest.scripts?.build !== undefined;
}

/**
 * Whether every package's dist/ was built after its sources last changed (`pnpm run build`, which the
 * test command runs first). Processes the tests start then run the built JavaScript with plain node,
 * which starts in about half the CPU time of the sources under tsx; with a stale or missing build they
 * run the sources, so that a test never runs code older than the checkout.
 */
export function distIsFresh(): boolean {
  if (fresh !== undefined) return fresh;
  const packages = readdirSync(path.join(ROOT, 'packages')).filter(hasBuild);
  fresh = packages.every((name) => {
    const dir = path.join(ROOT, 'packages', name);
    if (!existsSync(path.join(dir, 'dist'))) return false;
    const src = newest(path.join(dir, 'src'), (f) => f.endsWith('.test.ts'));
    return newest(path.join(dir, 'dist'), () => false) >= src;
  });
  return fresh;
}

/** Node's arguments to run the workspace's code: its built JavaScript when fresh, else its sources under tsx. */
export function nodeArgs(): string[] {
  return distIsFresh() ? [`--conditions=${DIST_CONDITION}`] : ['--import', 'tsx'];
}

/** A package's entry point (`packages/<name>/src/<file>.ts`) as it is run: built or from its sources. */
export function entryPoint(script: string): string {
  const built = script.replace(/^(packages\/[^/]+)\/src\/(.+)\.ts$/, '$1/dist/$2.js');
  return path.join(ROOT, distIsFresh() ? built : script);
}

const CACHE = path.join(ROOT, 'node_modules/.cache/agent-reach-test');

/**
 * A TypeScript tool module of the tests (TOOL_MODULES) as JavaScript for processes that run the built
 * packages without tsx: compiled once per content into node_modules/.cache (from where its imports of
 * the workspace packages resolve as the original's do).
 */
function compiledModule(file: string): string {
  const source = readFileSync(file, 'utf8');
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const out = path.join(CACHE, `${path.basename(file, '.ts')}-${digest}.mjs`);
  if (existsSync(out)) return out;
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  const { outputText } = ts.transpileModule(source, {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  mkdirSync(CACHE, { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, outputText);
  renameSync(tmp, out);
  return out;
}

/** `env` for a process run by `nodeArgs()`: without tsx, TypeScript tool modules are given compiled. */
export function childEnv(env: Record<string, string>): Record<string, string> {
  if (!distIsFresh() || !env.TOOL_MODULES) return env;
  const modules = env.TOOL_MODULES.split(',').map((m) => (m.endsWith('.ts') ? compiledModule(m) : m));
  return { ...env, TOOL_MODULES: modules.join(',') };
}

/** The command line (after `node`) that runs the agent-reach CLI with `args`. */
export function cliArgs(args: string[]): string[] {
  // The workspace's bin runs the sources under tsx by itself.
  if (!distIsFresh()) return [path.join(ROOT, 'packages/cli/bin/agent-reach.js'), ...args];
  return [...nodeArgs(), path.join(ROOT, 'packages/cli/dist/main.js'), ...args];
}
