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

/** Relative module specifiers a TypeScript module imports (`./x.js`, `../y/z.js`). */
function relativeImports(source: string): string[] {
  const found = new Set<string>();
  for (const m of source.matchAll(
    /\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]|\bimport\s+['"](\.{1,2}\/[^'"]+)['"]/g,
  )) {
    const spec = m[1] ?? m[2];
    if (spec) found.add(spec);
  }
  return [...found];
}

/** A module and every module it imports by a relative path, transitively: absolute `.ts` paths. */
function moduleTree(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const spec of relativeImports(readFileSync(file, 'utf8'))) {
    const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
    if (existsSync(target)) moduleTree(target, seen);
  }
  return seen;
}

/**
 * A TypeScript tool module of the tests or benchmarks (TOOL_MODULES) as JavaScript for processes that
 * run the built packages without tsx: it and the modules it imports by relative paths are compiled, once
 * per content, into node_modules/.cache in the layout they have in the repository (so their relative
 * imports, and their imports of the workspace packages, resolve as the originals' do).
 */
function compiledModule(file: string): string {
  const files = [...moduleTree(path.resolve(file))].sort();
  const digest = createHash('sha256');
  for (const f of files) digest.update(f).update(readFileSync(f));
  const dir = path.join(CACHE, digest.digest('hex').slice(0, 16));
  const outOf = (f: string) => path.join(dir, path.relative(ROOT, f)).replace(/\.ts$/, '.js');
  const out = outOf(path.resolve(file));
  if (existsSync(out)) return out;
  const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
  for (const f of files) {
    const { outputText } = ts.transpileModule(readFileSync(f, 'utf8'), {
      fileName: f,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const target = outOf(f);
    mkdirSync(path.dirname(target), { recursive: true });
    // The entry last, each file renamed into place whole: a process that finds the entry finds the rest.
    if (f !== path.resolve(file)) writeAtomically(target, outputText);
  }
  const entry = ts.transpileModule(readFileSync(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  writeAtomically(out, entry.outputText);
  return out;
}

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
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
