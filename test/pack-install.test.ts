import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDev, type DevStack } from '@agent-reach/cli';
import { ROOT } from './helpers/processes.js';
import { distIsFresh } from './helpers/node-run.js';
import { REDIS_URL, testRedis } from './helpers/redis.js';
import { OUTPUTS } from './helpers/platform.js';

const exec = promisify(execFile);
const PACKAGES = [
  'protocol',
  'shared',
  'archive',
  'executor',
  'scheduler',
  'llm-sim',
  'client',
  'evals',
  'cli',
];
const CONSUMER = path.join(ROOT, 'test/fixtures/consumer');
/** The README's client examples, run as they are. */
const SNIPPETS = ['http.mjs', 'queue.mjs'];
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
// npm's cache answers most of the install; a dependency it lacks comes from the registry.
const NPM_INSTALL = ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  files?: string[];
  engines?: Record<string, string>;
  bin?: Record<string, string>;
  exports: Record<string, { types: string; import: string }>;
  dependencies?: Record<string, string>;
}

/** Runs a command, returning its output whether it exits 0 or not. */
async function run(file: string, args: string[], options: { cwd: string; env?: Record<string, string> }) {
  try {
    const { stdout, stderr } = await exec(file, args, {
      cwd: options.cwd,
      // The consumer's environment: no tsx loader, no workspace resolution.
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), ...options.env },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function tarList(tarball: string): Promise<string[]> {
  const { stdout } = await exec('tar', ['-tzf', tarball]);
  return stdout.trim().split('\n');
}

async function tarManifest(tarball: string): Promise<Manifest> {
  const { stdout } = await exec('tar', ['-xzOf', tarball, 'package/package.json']);
  return JSON.parse(stdout) as Manifest;
}

/** Packs a package into `dir`; resolves to its tarball. */
async function pack(name: string, dir: string): Promise<string> {
  // `prepack` builds the package first (incremental: nothing to do after `pnpm build`).
  const { stdout } = await exec('pnpm', ['pack', '--pack-destination', dir], {
    cwd: path.join(ROOT, 'packages', name),
  });
  return stdout.trim().split('\n').at(-1) ?? '';
}

/**
 * Installs the client and the protocol (standing in for the registry, where the client's dependency
 * would come from) alone into a project of their own under `dir`.
 */
async function installClientAlone(dir: string, tarballs: Record<string, string>) {
  const alone = path.join(dir, 'client-alone');
  await exec('mkdir', ['-p', alone]);
  await writeFile(path.join(alone, 'package.json'), JSON.stringify({ name: 'alone', type: 'module' }));
  const installed = await run('npm', [...NPM_INSTALL, tarballs.client ?? '', tarballs.protocol ?? ''], {
    cwd: alone,
  });
  return { alone, installed };
}

describe('the packages, packed and installed into a project outside the workspace', () => {
  let dir: string;
  const tarballs: Record<string, string> = {};
  let app: string;
  let clientAlone: ReturnType<typeof installClientAlone>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-reach-pack-'));
    // Built and fresh, each prepack's build only reads the others' output: the packages are packed
    // together. Otherwise one at a time, so that no two builds write the same referenced project.
    if (distIsFresh()) {
      const packed = await Promise.all(PACKAGES.map((name) => pack(name, dir)));
      PACKAGES.forEach((name, i) => (tarballs[name] = packed[i] ?? ''));
    } else for (const name of PACKAGES) tarballs[name] = await pack(name, dir);
    // The client's own install goes on beside the consumer's; its test awaits it.
    clientAlone = installClientAlone(dir, tarballs);
    clientAlone.catch(() => undefined);
    app = path.join(dir, 'app');
    await exec('mkdir', ['-p', app]);
    await writeFile(
      path.join(app, 'package.json'),
      JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
    );
    const installed = await run(
      'npm',
      [
        ...NPM_INSTALL,
        ...PACKAGES.map((name) => tarballs[name] ?? ''),
        'bullmq@6.7.0',
        'ioredis@5.9.2',
        '@types/node@20',
      ],
      { cwd: app },
    );
    expect(installed.code, installed.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('packs each package with built JavaScript, declarations, a license and dependency ranges', async () => {
    for (const name of PACKAGES) {
      const tarball = tarballs[name] ?? '';
      const manifest = await tarManifest(tarball);
      const files = await tarList(tarball);
      expect(manifest.name).toBe(`@agent-reach/${name}`);
      expect(manifest.private, name).toBeUndefined();
      expect(manifest.license, name).toBe('MIT');
      expect(manifest.engines?.node, name).toBe('>=20');
      expect(files, name).toContain('package/LICENSE');
      expect(
        files.filter((f) => f.startsWith('package/src/')),
        name,
      ).toEqual([]);
      // Unit tests sit beside their modules in src/; neither they nor their builds ship.
      expect(
        files.filter((f) => /\.test\.(?:[cm]?js|d\.ts|ts)$/.test(f)),
        name,
      ).toEqual([]);
      for (const [subpath, target] of Object.entries(manifest.exports)) {
        expect(target.import, `${name} ${subpath}`).toMatch(/^\.\/dist\/.+\.js$/);
        expect(target.types, `${name} ${subpath}`).toMatch(/^\.\/dist\/.+\.d\.ts$/);
        expect(files, `${name} ${subpath}`).toContain(`package/${target.import.slice(2)}`);
        expect(files, `${name} ${subpath}`).toContain(`package/${target.types.slice(2)}`);
      }
      for (const [dep, range] of Object.entries(manifest.dependencies ?? {})) {
        expect(range, `${name} → ${dep}`).not.toMatch(/^workspace:/);
        if (dep.startsWith('@agent-reach/')) expect(range, `${name} → ${dep}`).toBe('^0.1.0');
      }
    }
    expect((await tarManifest(tarballs.cli ?? '')).bin).toEqual({ 'agent-reach': './dist/main.js' });
    expect(await tarList(tarballs['llm-sim'] ?? '')).toContain('package/scenarios/weather-trip.yaml');
    // The run inspector's bundle ships in the scheduler package: the API serves it offline, from no CDN.
    const scheduler = await tarList(tarballs.scheduler ?? '');
    expect(scheduler).toEqual(expect.arrayContaining(['package/ui-dist/app.js', 'package/ui-dist/app.css']));
    expect(scheduler.filter((f) => f.startsWith('package/ui/'))).toEqual([]);
  });

  it('shows in the README exactly the client examples this test runs', async () => {
    const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    for (const snippet of SNIPPETS) {
      const code = await readFile(path.join(CONSUMER, snippet), 'utf8');
      expect(readme, `README shows ${snippet}`).toContain(`\n${code.trim()}\n\`\`\``);
    }
  });

  it('installs the client with only the wire contract: the HTTP client needs protocol and TypeBox, nothing else', async () => {
    const { alone, installed } = await clientAlone;
    expect(installed.code, installed.stderr).toBe(0);
    const top = await readdir(path.join(alone, 'node_modules'));
    expect(top.filter((d) => !d.startsWith('.')).sort()).toEqual(['@agent-reach', '@sinclair']);
    expect((await readdir(path.join(alone, 'node_modules/@agent-reach'))).sort()).toEqual([
      'client',
      'protocol',
    ]);
    expect(await readdir(path.join(alone, 'node_modules/@sinclair'))).toEqual(['typebox']);
    const root = await run(
      'node',
      [
        '--input-type=module',
        '-e',
        "import('@agent-reach/client').then((m) => console.log(typeof m.createClient))",
      ],
      { cwd: alone },
    );
    expect(root.stdout.trim()).toBe('function');
    // The queue entry names what is missing when bullmq is not installed beside it.
    const queue = await run(
      'node',
      ['--input-type=module', '-e', "await import('@agent-reach/client/queue')"],
      {
        cwd: alone,
      },
    );
    expect(queue.code).not.toBe(0);
    expect(queue.stderr).toMatch(/Cannot find package 'bullmq'/);
  }, 120_000);

  it('type-checks a consumer against the installed declarations with NodeNext and Bundler resolution', async () => {
    await writeFile(path.join(app, 'consumer.ts'), await readFile(path.join(CONSUMER, 'consumer.ts')));
    const check = async ([moduleKind, resolution]: readonly [string, string]) => {
      const tsconfig = `tsconfig.${resolution.toLowerCase()}.json`;
      await writeFile(
        path.join(app, tsconfig),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            lib: ['ES2023', 'DOM'],
            module: moduleKind,
            moduleResolution: resolution,
            strict: true,
            exactOptionalPropertyTypes: true,
            noUncheckedIndexedAccess: true,
            types: ['node'],
            noEmit: true,
            skipLibCheck: false,
          },
          files: ['consumer.ts'],
        }),
      );
      return { resolution, checked: await run('node', [TSC, '-p', tsconfig], { cwd: app }) };
    };
    // The two checks are independent compilations of the same file: they run side by side.
    const results = await Promise.all(
      (
        [
          ['NodeNext', 'NodeNext'],
          ['ESNext', 'Bundler'],
        ] as const
      ).map(check),
    );
    for (const { resolution, checked } of results) {
      expect(checked.stdout + checked.stderr, resolution).toBe('');
      expect(checked.code, resolution).toBe(0);
    }
  }, 120_000);

  describe('against a running stack', () => {
    const t = testRedis();
    let stack: DevStack;
    let env: Record<string, string>;

    beforeAll(async () => {
      stack = await startDev({
        REDIS_URL,
        AR_KEY_PREFIX: t.prefix,
        API_PORT: '0',
        AGENTS_FILE: path.join(ROOT, 'config/agents.yaml'),
        OUTPUTS_DIR: OUTPUTS,
        LOG_LEVEL: 'silent',
      });
      env = {
        AGENT_REACH_URL: stack.apiUrl,
        AGENT_REACH_KEY: stack.apiKey,
        REDIS_URL,
        AR_KEY_PREFIX: t.prefix,
        AGENTS_FILE: path.join(ROOT, 'config/agents.yaml'),
        LOG_LEVEL: 'warn',
      };
      for (const snippet of SNIPPETS)
        await writeFile(path.join(app, snippet), await readFile(path.join(CONSUMER, snippet)));
    });
    afterAll(async () => {
      await stack?.close();
      await t.cleanup();
    });

    it('runs the README snippets with plain node: the HTTP client creates, streams and waits for a run', async () => {
      const http = await run('node', ['http.mjs'], { cwd: app, env });
      expect(http.stderr).toBe('');
      const lines = http.stdout.trim().split('\n');
      expect(lines[0]).toBe('run_started');
      expect(lines).toContain('tool_result');
      expect(http.stdout).toMatch(/\nrun_finished\nsucceeded \S/);
      expect(http.code).toBe(0);
    }, 120_000);

    it('starts a run through Redis with enqueueRun from @agent-reach/client/queue', async () => {
      const queue = await run('node', ['queue.mjs'], { cwd: app, env });
      expect(queue.stderr).toBe('');
      expect(queue.stdout.trim()).toMatch(/^run_[0-9a-f-]{36} succeeded$/);
      const runId = queue.stdout.split(' ')[0] ?? '';
      expect((await stack.scheduler.control.get(runId))?.state?.metadata).toEqual({ ticket: '982' });
    }, 120_000);

    it('runs the installed agent-reach command from built JavaScript: --help, a command usage, run --follow', async () => {
      const bin = path.join(app, 'node_modules/.bin/agent-reach');
      const help = await run(bin, ['--help'], { cwd: app, env });
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^agent-reach — queue-driven tool execution/);
      const runsHelp = await run(bin, ['runs', '--help'], { cwd: app, env });
      expect(runsHelp.stdout).toMatch(/^Usage: agent-reach runs <ls\|show\|events\|replay>/);
      const follow = await run(
        bin,
        [
          'run',
          '查一下上海天气，然后写一份周末两日游建议存成 md 文件',
          '--agent',
          'trip_planner',
          '--follow',
        ],
        { cwd: app, env },
      );
      expect(follow.stderr).toBe('');
      expect(follow.stdout).toMatch(/^started run_/);
      expect(follow.stdout).toMatch(/run finished: succeeded/);
      expect(follow.code).toBe(0);
    }, 120_000);
  });
});
