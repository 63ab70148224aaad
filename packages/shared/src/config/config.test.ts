import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

/** The markdown files that document configuration: the READMEs and everything under docs/. */
function configDocs(): string[] {
  const under = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? under(path.join(dir, e.name))
        : e.name.endsWith('.md')
          ? [path.join(dir, e.name)]
          : [],
    );
  const packages = readdirSync(path.join(ROOT, 'packages')).map((p) => path.join('packages', p, 'README.md'));
  return ['README.md', path.join('config', 'README.md'), ...packages, ...under('docs')].filter((f) => {
    try {
      readFileSync(path.join(ROOT, f));
      return true;
    } catch {
      return false;
    }
  });
}

/** Every `NAME=value` a markdown file's code (blocks and inline spans) sets, with where it is. */
function envExamples(file: string): Array<{ file: string; name: string; value: string }> {
  const md = readFileSync(path.join(ROOT, file), 'utf8');
  const code = [...md.matchAll(/```[^\n]*\n([\s\S]*?)```|`([^`\n]+)`/g)].map((m) => m[1] ?? m[2] ?? '');
  return code.flatMap((text) =>
    [...text.matchAll(/(?:^|[\s;(])([A-Z][A-Z0-9_]*)=("[^"]*"|'[^']*'|[^\s`]*)/g)].map((m) => ({
      file,
      name: m[1] ?? '',
      value: (m[2] ?? '').replace(/^(["'])(.*)\1$/, '$2'),
    })),
  );
}

const BOOLEAN_SETTINGS = [
  ['REDIS_CLUSTER', (c: ReturnType<typeof loadConfig>) => c.redisCluster],
  ['API_OPEN_HEALTH', (c: ReturnType<typeof loadConfig>) => c.api.openHealth],
  ['API_OPEN_METRICS', (c: ReturnType<typeof loadConfig>) => c.api.openMetrics],
  ['API_TRUST_PROXY', (c: ReturnType<typeof loadConfig>) => c.api.trustProxy],
] as const;

describe('loadConfig', () => {
  it('reads 1/0, true/false, yes/no and on/off in any case for every boolean setting', () => {
    const spellings: Array<[string, boolean]> = [
      ['1', true],
      ['0', false],
      ['true', true],
      ['FALSE', false],
      ['Yes', true],
      ['no', false],
      ['ON', true],
      ['off', false],
    ];
    for (const [name, read] of BOOLEAN_SETTINGS) {
      for (const [value, expected] of spellings) {
        expect([name, value, read(loadConfig({ [name]: value }))]).toEqual([name, value, expected]);
      }
    }
  });

  it('refuses any other spelling of a boolean, naming the variable and the accepted spellings', () => {
    for (const [name] of BOOLEAN_SETTINGS) {
      expect(() => loadConfig({ [name]: 'maybe' })).toThrow(
        `invalid configuration: ${name} must be one of 1/0, true/false, yes/no, on/off (got "maybe")`,
      );
    }
    expect(() => loadConfig({ API_OPEN_METRICS: 'y', API_PORT: 'x' })).toThrow(
      /API_OPEN_METRICS must be one of .*; API_PORT must be integer/,
    );
  });

  it('accepts every environment example of the README and the configuration docs', () => {
    const examples = configDocs().flatMap(envExamples);
    expect(examples.map((e) => e.name)).toContain('REDIS_CLUSTER');
    for (const { file, name, value } of examples) {
      let problem: unknown;
      try {
        loadConfig({ [name]: value });
      } catch (err) {
        problem = err instanceof Error ? err.message : err;
      }
      expect({ file, example: `${name}=${value}`, problem }).toEqual({
        file,
        example: `${name}=${value}`,
        problem: undefined,
      });
    }
  });
});
