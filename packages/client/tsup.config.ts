import { defineConfig } from 'tsup';

// The client is bundled into two entries that import only the wire contract (`@agent-reach/protocol`, a
// dependency, which also holds the pure Redis and run-job helpers the `queue` entry uses). `bullmq` and
// `ioredis` stay imports of the `queue` entry only (optional peer dependencies).
export default defineConfig({
  entry: { index: 'src/index.ts', queue: 'src/queue.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  external: ['@agent-reach/protocol', 'bullmq', 'ioredis'],
  clean: true,
  splitting: true,
  treeshake: true,
});
