import { defineConfig } from 'tsup';

// The client is bundled so that installing it pulls only the wire contract (`@agent-reach/protocol`, a
// dependency): the few pure parts of `@agent-reach/shared` the `queue` entry uses (connection backoff,
// run job options) are inlined, types included. `bullmq` and `ioredis` stay imports of the `queue` entry
// only (optional peer dependencies).
export default defineConfig({
  entry: { index: 'src/index.ts', queue: 'src/queue.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: {
    resolve: [/^@agent-reach\/shared/],
    // Declarations come from shared's sources, inlined like its code.
    compilerOptions: {
      paths: {
        '@agent-reach/shared': ['../shared/src/index.ts'],
        '@agent-reach/shared/*': ['../shared/src/*.ts'],
      },
    },
  },
  noExternal: ['@agent-reach/shared'],
  external: ['@agent-reach/protocol', 'bullmq', 'ioredis'],
  clean: true,
  splitting: true,
  treeshake: true,
});
