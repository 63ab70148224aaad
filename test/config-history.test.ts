import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_HISTORY_LENGTH, publishConfig } from '@agent-reach/shared';
import { runCli } from './helpers/cli.js';
import { REDIS_URL, testRedis } from './helpers/redis.js';

const agents = (tools: string[]) => `agents:\n  - name: desk\n    tools: [${tools.join(', ')}]\n`;

// The CLI as a process of its own against Redis only: no scheduler, no executor, no API.
describe(
  'configuration history: who applied each version, show, history and rollback',
  { timeout: 120_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let dir: string;
    let env: Record<string, string>;
    const cli = (args: string[], extra: Record<string, string> = {}) => runCli({ ...env, ...extra }, args);
    const history = async () =>
      (await cli(['config', 'history', '--json'])).stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as {
              version: number;
              digest: string;
              applied_at: number;
              applied_by: string;
              source: string;
            },
        );

    beforeAll(async () => {
      t = testRedis();
      dir = await mkdtemp(path.join(tmpdir(), 'config-history-'));
      await writeFile(path.join(dir, 'v1.yaml'), agents(['query_weather']));
      await writeFile(path.join(dir, 'v2.yaml'), agents(['query_weather', 'query_order_status']));
      env = {
        REDIS_URL,
        AR_KEY_PREFIX: t.prefix,
        AGENTS_FILE: path.join(dir, 'v1.yaml'),
        AGENT_REACH_OPERATOR: '',
      };
    });
    afterAll(async () => {
      await t?.cleanup();
      await rm(dir, { recursive: true, force: true });
    });

    it('records who applied each version (--by, else AGENT_REACH_OPERATOR, else user@host) and lists them newest first', async () => {
      expect((await cli(['config', 'apply', path.join(dir, 'v1.yaml'), '--by', 'alice'])).code).toBe(0);
      expect(
        (await cli(['config', 'apply', path.join(dir, 'v2.yaml')], { AGENT_REACH_OPERATOR: 'bob' })).code,
      ).toBe(0);
      expect((await cli(['config', 'apply', path.join(dir, 'v2.yaml')])).code).toBe(0);
      // Reads, run side by side.
      const [versions, text] = await Promise.all([history(), cli(['config', 'history'])]);
      expect(versions.map((v) => [v.version, v.applied_by])).toEqual([
        [3, `${userInfo().username}@${hostname()}`],
        [2, 'bob'],
        [1, 'alice'],
      ]);
      for (const v of versions) {
        expect(v.digest).toMatch(/^[0-9a-f]{16}$/);
        expect(v.applied_at).toBeGreaterThan(0);
        expect(v.source).toMatch(/^config apply .*v[12]\.yaml$/);
      }
      // Same document, same digest; another document, another.
      expect(versions[0]?.digest).toBe(versions[1]?.digest);
      expect(versions[1]?.digest).not.toBe(versions[2]?.digest);
      expect(text.stdout.split('\n')[0]).toMatch(
        /^version 3 {2}digest [0-9a-f]{16} {2}applied \S+ {2}by \S+@\S+ {2}\(config apply /,
      );
    });

    it('shows an earlier version by number, and answers exit 3 for a version the history does not hold', async () => {
      const [first, missing, latest] = await Promise.all([
        cli(['config', 'show', '1']),
        cli(['config', 'show', '99']),
        cli(['config', 'show', 'latest']),
      ]);
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(
        /^version 1, digest [0-9a-f]{16}, applied .* by config apply .*v1\.yaml$/m,
      );
      expect(first.stdout).toContain('"query_weather"');
      expect(first.stdout).not.toContain('query_order_status');
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain('not found: configuration version 99 (see config history)');
      expect(latest.code).toBe(2);
    });

    it('rolls back to an earlier version by publishing its document as a new version, recorded with who did it', async () => {
      const rolled = await cli(['config', 'rollback', '1', '--by', 'carol']);
      expect(rolled.code).toBe(0);
      expect(rolled.stdout).toContain('published configuration version 4');
      // Reads, and a rollback to a version the history does not hold (which publishes nothing), side by side.
      const [[latest, , , first], shown, missing] = await Promise.all([
        history(),
        cli(['config', 'show']),
        cli(['config', 'rollback', '99']),
      ]);
      expect(latest).toMatchObject({ version: 4, applied_by: 'carol', source: 'config rollback 1' });
      expect(latest?.digest).toBe(first?.digest);
      expect(shown.stdout).toMatch(/^version 4, /m);
      expect(shown.stdout).not.toContain('query_order_status');
      expect(missing.code).toBe(3);
    });

    it('refuses a rollback to a version that no longer passes the checks an apply makes, and keeps the version in force', async () => {
      // A version naming a tool nobody registers (published by a library call, which leaves checks to its caller).
      const bad = await publishConfig(
        t.redis,
        t.keys,
        { agents: [{ name: 'desk', tools: ['no_such_tool'] }] },
        'test',
        'dave',
      );
      expect((await cli(['config', 'apply', path.join(dir, 'v2.yaml')])).code).toBe(0);
      const refused = await cli(['config', 'rollback', String(bad)]);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain('"no_such_tool" is not a registered tool');
      expect(refused.stderr).toContain(`refused: configuration version ${bad + 1} stays in force`);
      expect((await history())[0]?.version).toBe(bad + 1);
    });

    it(`keeps the last ${CONFIG_HISTORY_LENGTH} versions`, async () => {
      for (let i = 0; i < CONFIG_HISTORY_LENGTH; i += 1)
        await publishConfig(
          t.redis,
          t.keys,
          { agents: [{ name: 'desk', tools: ['query_weather'] }] },
          'test',
          'bulk',
        );
      const versions = await history();
      expect(versions).toHaveLength(CONFIG_HISTORY_LENGTH);
      const newest = versions[0]?.version as number;
      expect(versions.at(-1)?.version).toBe(newest - CONFIG_HISTORY_LENGTH + 1);
    });
  },
);
