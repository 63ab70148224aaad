import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/processes.js';
import { childEnv, DIST_CONDITION, distIsFresh } from './helpers/node-run.js';

const run = promisify(execFile);

describe('TypeScript tool modules given to processes that run the built packages', () => {
  it.skipIf(!distIsFresh())(
    "loads a tool module that imports another module of the repository by a relative path (the benchmarks' tools)",
    async () => {
      const source = path.join(ROOT, 'bench/scale-out/tools.ts');
      const { TOOL_MODULES: compiled } = childEnv({ TOOL_MODULES: source });
      expect(compiled).toMatch(/\.js$/);
      expect(compiled).not.toBe(source);
      // As an executor started with the built packages loads it: plain node, no TypeScript loader.
      const { stdout } = await run(
        process.execPath,
        [
          `--conditions=${DIST_CONDITION}`,
          '--input-type=module',
          '-e',
          'const m = await import(process.argv[1]); console.log(m.default.map((t) => t.name).join(","));',
          compiled ?? '',
        ],
        { cwd: ROOT, timeout: 20_000 },
      );
      expect(stdout.trim()).toBe('bench_sleep,bench_noop');
    },
    30_000,
  );
});
