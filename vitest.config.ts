import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * Suites of several minutes' worth together that run only with `pnpm test:long` (TEST_SUITE=long), not in
 * the default suite, which is held under 10 minutes on 2 cores: a Redis Cluster of six started and failed
 * over, packed tarballs installed into fresh projects, storms of kills, and the workflow CLI end to end.
 */
const LONG_ONLY = [
  'test/cluster.test.ts',
  'test/pack-install.test.ts',
  'test/chaos.test.ts',
  'test/workflows-cli.test.ts',
];
const longRun = process.env.TEST_SUITE === 'long';

/**
 * Suites that take a minute or more (real processes, faults injected, a Redis Cluster, packed tarballs),
 * longest first, then those of half a minute or more (many CLI processes, fuzzing).
 * They start first, so that the two workers finish together instead of one waiting for a long suite that
 * happened to start last: without a results cache (a fresh clone, CI) vitest orders files by size.
 */
const LONG_SUITES = [
  'test/faults.test.ts',
  'test/cluster.test.ts',
  'test/pack-install.test.ts',
  'test/cli.test.ts',
  'test/chaos.test.ts',
  'test/workflows-cli.test.ts',
  'test/inspector.test.ts',
  'test/config-history.test.ts',
  'test/live-workflows.test.ts',
  'test/observability.test.ts',
  'test/api-fuzz.test.ts',
  'test/executor-processes.test.ts',
];

class LongSuitesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = LONG_SUITES.findIndex((suite) => spec.moduleId.endsWith(suite));
      return i === -1 ? LONG_SUITES.length : i;
    };
    // Stable: the base order holds within the long suites' ranks and among all the others.
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: longRun
      ? LONG_ONLY
      : ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: longRun ? [] : [...LONG_ONLY, '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Each worker imports the platform and its dependencies once, not once per file: a fresh module graph
    // per file cost about 3 s of imports per file (ajv schemas compiled, openai, bullmq, fastify, the MCP
    // SDK loaded again), a third of the suite's time on 2 cores. Files leave no global state behind them
    // (servers, connections and tracer providers are closed in their own afterAll/finally). The four long
    // suites keep a process each: they are few, so importing is a small part of their time.
    isolate: longRun,
    fileParallelism: true,
    maxWorkers: 2,
    sequence: { sequencer: LongSuitesFirst },
  },
});
