import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The scheduler's rooms, top to bottom: a room imports only the rooms below it, never one beside it or
 * above it, nor the files at the top of src/ that assemble them.
 */
const SCHEDULER_LAYERS = [
  ['api'],
  ['triggers'],
  ['workflows'],
  ['runs'],
  ['agent-loop'],
  ['fleet', 'model', 'callbacks'],
];
const SCHEDULER_TOP = ['scheduler', 'index', 'internal', 'main'];

/**
 * Other packages import `@agent-reach/shared` through its entries only (the root and `tracing-sdk`), never
 * a file of its rooms: those are the package's own to rearrange.
 */
const SHARED_INTERNALS = {
  group: [
    '@agent-reach/shared/*',
    '!@agent-reach/shared/tracing-sdk',
    '**/shared/src/**',
    '**/shared/dist/**',
  ],
  message: 'Import @agent-reach/shared or @agent-reach/shared/tracing-sdk, not a file inside shared.',
};

const schedulerLayerRules = SCHEDULER_LAYERS.flatMap((layer, depth) =>
  layer.map((room) => {
    const above = [...SCHEDULER_LAYERS.slice(0, depth).flat(), ...layer.filter((r) => r !== room)];
    return {
      files: [`packages/scheduler/src/${room}/**/*.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                group: [
                  ...above.map((r) => `**/${r}/**`),
                  ...SCHEDULER_TOP.flatMap((f) => [`../${f}.js`, `../../${f}.js`]),
                ],
                message: `scheduler/src/${room} imports only the rooms below it (${
                  SCHEDULER_LAYERS.slice(depth + 1)
                    .flat()
                    .join(', ') || 'none'
                }).`,
              },
              // Repeated here: this rule's options replace, not extend, the ones set for every file.
              SHARED_INTERNALS,
            ],
          },
        ],
      },
    };
  }),
);

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      'outputs/**',
      'bench/results/**',
      'eslint.config.js',
      'packages/*/bin/*.js',
      'packages/*/dist/**',
      'packages/*/ui-dist/**',
      'test-results/**',
      // Plain JavaScript run by test/pack-install.test.ts in a project outside the workspace.
      'test/fixtures/consumer/*.mjs',
      // Plain JavaScript MCP servers the executor starts as processes in the MCP tests.
      'test/fixtures/mcp/*.mjs',
      'packages/faults/fixtures/mcp/*.mjs',
      // The same, started by the tool-call benchmark.
      'bench/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: [
      'test/**',
      'packages/*/test/**',
      'bench/**',
      'scripts/**',
      'packages/*/src/main.ts',
      'packages/*/src/cli.ts',
    ],
    rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.ts', '**/*.js', '**/*.mjs'],
    ignores: ['packages/shared/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [SHARED_INTERNALS] }] },
  },
  ...schedulerLayerRules,
  {
    // The run inspector: browser JavaScript bundled by esbuild, outside the TypeScript projects.
    files: ['packages/scheduler/ui/**/*.js', 'packages/scheduler/scripts/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'fetch',
          'URLSearchParams',
          'TextDecoder',
          'AbortController',
          'Event',
          'URL',
          'setInterval',
          'clearInterval',
          'setTimeout',
          'clearTimeout',
          'process',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
