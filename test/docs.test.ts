import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const README = 'README.md';
const PAGES = readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const ALL = [README, ...PAGES];

/** The `## ` section of `file` titled `title` (up to the next `## `), or undefined. */
function section(file: string, title: string): string | undefined {
  return read(file)
    .split(/^## /m)
    .find((s) => s.startsWith(`${title}\n`));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = read(file).replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
}

/** `[label](target)` links of a Markdown file that point into the repository. */
function localLinks(file: string): Array<{ target: string; hash: string | undefined }> {
  const text = read(file).replace(/^```[\s\S]*?^```/gm, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^(https?:|mailto:)/.test(t))
    .map((t) => {
      const [target, hash] = t.split('#');
      return { target: target ? path.join(path.dirname(file), target) : file, hash };
    });
}

/** Every number in `text`, thousands separators removed. */
const num = (text: string) => Number(text.replace(/,/g, ''));

describe('the README and the pages of docs/', () => {
  it('gives a newcomer the two set-up commands exactly, in a README of a few hundred lines', () => {
    const readme = read(README);
    expect(readme).toContain('\nnpm install -g pnpm@10 && pnpm install && pnpm demo\n');
    expect(readme).toContain('\nnpm install -g pnpm@10 && pnpm install && pnpm test\n');
    expect(readme.split('\n').length).toBeLessThan(400);
  });

  it('links every page of docs/ from the README', () => {
    const linked = new Set(localLinks(README).map((l) => l.target));
    expect(PAGES.filter((p) => !linked.has(p))).toEqual([]);
  });

  it('links only files that exist, and only headings those files have', () => {
    const broken = ALL.flatMap((file) =>
      localLinks(file).flatMap(({ target, hash }) => {
        if (!existsSync(path.join(ROOT, target))) return [`${file}: ${target} does not exist`];
        if (hash && target.endsWith('.md') && !anchorsOf(target).has(hash))
          return [`${file}: ${target} has no heading #${hash}`];
        return [];
      }),
    );
    expect(broken).toEqual([]);
  });

  it('names only pnpm scripts the workspace has', () => {
    const scripts = Object.keys(
      (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts,
    );
    const builtins = ['install', 'exec', 'pack', 'add', 'run', '--filter'];
    const unknown = ALL.flatMap((file) =>
      [...read(file).matchAll(/\bpnpm ((?:--)?[a-z][\w:-]*)/g)]
        .map((m) => m[1]!)
        .filter((name) => !scripts.includes(name) && !builtins.includes(name))
        .map((name) => `${file}: pnpm ${name}`),
    );
    expect(unknown).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  const page = read('docs/configuration.md');
  const documented = new Set(
    [...page.matchAll(/^\| (.+?) \|/gm)].flatMap((m) => m[1]!.match(/[A-Z][A-Z0-9_]{2,}/g) ?? []),
  );

  it('lists every variable loadConfig reads', () => {
    const read_ = [...read('packages/shared/src/config/config.ts').matchAll(/\['([A-Z][A-Z0-9_]+)', '/g)].map(
      (m) => m[1]!,
    );
    expect(read_.length).toBeGreaterThan(40);
    expect(read_.filter((v) => !documented.has(v))).toEqual([]);
  });

  it('lists only variables some process reads', () => {
    const sources = readdirSync(path.join(ROOT, 'packages'))
      .map((p) => `packages/${p}/src`)
      .concat('scripts')
      .filter((dir) => existsSync(path.join(ROOT, dir)))
      .flatMap((dir) =>
        readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) =>
          path.join(dir, f),
        ),
      )
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map(read)
      .join('\n');
    const unread = [...documented].filter((v) => !sources.includes(`'${v}'`) && !sources.includes(`.${v}`));
    expect(unread).toEqual([]);
  });
});

describe('docs/api.md', () => {
  it('documents every route the API registers', () => {
    const dir = 'packages/scheduler/src/api/routes';
    const routes = readdirSync(path.join(ROOT, dir))
      .filter((f) => f.endsWith('.ts'))
      .flatMap((f) =>
        [
          ...read(`${dir}/${f}`).matchAll(
            /\bapp\.(get|post|put|patch|delete)\s*(?:<[^(]*?>)?\(\s*'([^']+)'/g,
          ),
        ].map((m) => `${m[1]!.toUpperCase()} ${m[2]!}`),
      );
    expect(routes.length).toBeGreaterThan(15);
    const docs = PAGES.map(read).join('\n');
    const undocumented = routes.filter((r) => {
      const url = r.split(' ')[1]!;
      return url.startsWith('/v1/') ? !docs.includes(`\`${r}\``) : !docs.includes(url);
    });
    expect(undocumented).toEqual([]);
  });
});

describe('docs/observability.md', () => {
  it('has a row in its metric catalog for every metric the code defines', () => {
    const catalog = section('docs/observability.md', 'Metric catalog') ?? '';
    const files = [
      'packages/shared/src/observability/metrics.ts',
      'packages/shared/src/observability/workflow-metrics.ts',
      'packages/scheduler/src/fleet/queue-sampler.ts',
    ];
    const defined = files.flatMap((f) =>
      [...read(f).matchAll(/`\$\{METRIC_PREFIX\}([a-z0-9_]+)`/g)].map((m) => `agent_reach_${m[1]!}`),
    );
    expect(defined.length).toBeGreaterThan(25);
    expect(defined.filter((m) => !catalog.includes(`| \`${m}\``))).toEqual([]);
  });

  it('names every alert of deploy/prometheus/alerts.yml', () => {
    const alerts = [...read('deploy/prometheus/alerts.yml').matchAll(/alert: (\w+)/g)].map((m) => m[1]!);
    expect(alerts.length).toBeGreaterThan(5);
    const page = read('docs/observability.md');
    expect(alerts.filter((a) => !page.includes(`\`${a}\``))).toEqual([]);
  });
});

describe('docs/capacity.md', () => {
  const page = read('docs/capacity.md');

  it('works out every product and quotient it writes (to within 0.5 %)', () => {
    const sums = [
      ...page.matchAll(/(\d[\d,.]*(?: [×÷] \d[\d,.]*)+) = \**(\d[\d,.]*)\**(?![\d,.]*\s*(?:GB|TB|MB))/g),
    ];
    expect(sums.length).toBeGreaterThanOrEqual(4);
    const wrong = sums.flatMap((m) => {
      const terms = m[1]!.split(' ');
      let value = num(terms[0]!);
      for (let i = 1; i < terms.length; i += 2)
        value = terms[i] === '×' ? value * num(terms[i + 1]!) : value / num(terms[i + 1]!);
      return Math.abs(value - num(m[2]!)) <= 0.005 * value ? [] : [`${m[0]} (${value.toFixed(2)})`];
    });
    expect(wrong).toEqual([]);
  });

  it('rounds every shard count up', () => {
    const counts = [...page.matchAll(/⌈([\d,]+) ÷ ([\d,]+)⌉ = \*\*(\d+) shards\*\*/g)];
    expect(counts.length).toBe(4);
    const wrong = counts.filter((m) => Math.ceil(num(m[1]!) / num(m[2]!)) !== num(m[3]!));
    expect(wrong.map((m) => m[0])).toEqual([]);
  });
});

describe('docs/benchmarks.md', () => {
  it('describes every benchmark script of the workspace', () => {
    const scripts = Object.keys(
      (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts,
    ).filter((s) => s === 'bench' || s.startsWith('bench:'));
    const page = read('docs/benchmarks.md');
    expect(scripts.filter((s) => !page.includes(`| \`pnpm ${s}\``))).toEqual([]);
  });
});
