import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import type { WorkflowView } from '@agent-reach/protocol';
import { startExecutorWith, startSchedulerChild, TEST_AGENTS, type Child } from './helpers/processes.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const API_KEY = `cf-${randomUUID().replace(/-/g, '')}`;
/** One modification time for every agents file written here: a replacement cannot be told apart by it. */
const SAME_MTIME = new Date('2024-01-01T00:00:00Z');

const SOLO = ['workflows:', '  - name: solo', '    nodes:', '      - { id: only, agent: test_agent }'];

/** Two problems at once: a ring of nodes, and a node whose agent is not declared. */
const BROKEN = [
  'workflows:',
  '  - name: ring',
  '    nodes:',
  "      - { id: p, agent: test_agent, depends_on: [q], input: 'p {{nodes.q.output}}' }",
  "      - { id: q, agent: test_agent, depends_on: [p], input: 'q {{nodes.p.output}}' }",
  '  - name: lost',
  '    nodes:',
  '      - { id: x, agent: nobody }',
].join('\n');

/** What POST answers: the workflow or run created, or an error. */
type Answer = Record<string, unknown> & { workflow_id: string; error?: { code: string; message: string } };

/** A refusal of BROKEN names both of its problems. */
function expectBothProblems(line: string): void {
  expect(line).toContain('workflow \\"ring\\": depends_on has a cycle: p → q → p');
  expect(line).toContain(
    'workflow \\"lost\\": node \\"x\\": agent \\"nobody\\" is not declared in the agents file',
  );
}

/** Writes `file` as an editor saves: a new file beside it, renamed over it. */
async function replaceByRename(file: string, text: string, mtime?: Date): Promise<void> {
  const next = path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID()}.swp`);
  await writeFile(next, text);
  if (mtime) await utimes(next, mtime, mtime);
  await rename(next, file);
}

// Real processes: an executor and schedulers (each serving the HTTP API) forked from their main.ts, llm-sim over HTTP, and
// local files created, replaced and removed while they run. Nothing is published to Redis here.
describe(
  'local configuration files that appear, are replaced or go away while a scheduler runs',
  { timeout: 120_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let dir: string;
    let agentsFile: string;
    let env: Record<string, string>;
    let scheduler: Child;
    const children: Child[] = [];

    const post = async (base: string, url: string, body: unknown) => {
      const res = await fetch(`${base}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Answer };
    };
    const apiOf = async (child: Child) =>
      String((await child.ready).apiUrl).replace('://0.0.0.0:', '://127.0.0.1:');
    const start = (child: Child) => {
      children.push(child);
      return child;
    };
    /**
     * What `child` declares now, asked without changing anything: the 422 of a name nobody declares lists
     * the workflows (`declared: …`) or the agents (`known: …`) in force.
     */
    const declared = async (child: Child, what: 'workflows' | 'agents') => {
      const res =
        what === 'workflows'
          ? await post(await apiOf(child), '/v1/workflows', { workflow: 'no_such_name', input: 'x' })
          : await post(await apiOf(child), '/v1/runs', { agent: 'no_such_name', input: 'x' });
      expect(res.status).toBe(422);
      const list = /(?:declared|known): (.*)$/.exec(String(res.json.error?.message))?.[1] ?? '';
      return list === '(none)' ? [] : list.split(', ');
    };
    /** Waits until `child` declares (or, with `present` false, no longer declares) `name`. */
    const until = (child: Child, what: 'workflows' | 'agents', name: string, present = true) =>
      waitFor(
        async () => (await declared(child, what)).includes(name) === present,
        15_000,
        `${what} ${present ? 'to declare' : 'to no longer declare'} ${name}`,
      );
    /** Starts `workflow` on `child` once its configuration declares it. */
    const startedOnce = async (child: Child, workflow: string) => {
      await until(child, 'workflows', workflow);
      const res = await post(await apiOf(child), '/v1/workflows', { workflow, input: 'hello' });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json.workflow_id;
    };
    const ended = async (child: Child, id: string) => {
      const base = await apiOf(child);
      return waitFor(
        async () => {
          const res = await fetch(`${base}/v1/workflows/${id}`, {
            headers: { authorization: `Bearer ${API_KEY}` },
          });
          const json = (await res.json()) as WorkflowView;
          return json.status === 'running' ? undefined : json;
        },
        30_000,
        `workflow ${id} to end`,
      );
    };
    /** The first log line of `child` that contains `text`, once it has been written. */
    const logged = (child: Child, text: string, from = 0) =>
      waitFor(
        () =>
          child
            .output()
            .slice(from)
            .split('\n')
            .find((l) => l.includes(text)),
        15_000,
        `"${text}" in the log`,
      );

    beforeAll(async () => {
      t = testRedis();
      dir = await mkdtemp(path.join(tmpdir(), 'live-config-files-'));
      agentsFile = path.join(dir, 'agents.yaml');
      await copyFile(TEST_AGENTS, agentsFile);
      await utimes(agentsFile, SAME_MTIME, SAME_MTIME);
      sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'done' }] }] });
      // No workflows.yaml beside the agents file yet.
      env = testEnv(t.prefix, sim, {
        AGENTS_FILE: agentsFile,
        ...apiEnv(API_KEY),
        // The tests poll the API until a file is taken up: more often than a caller's default allowance.
        API_RATE_LIMIT_PER_MINUTE: '100000',
        LOG_LEVEL: 'warn',
      });
      // Schedulers start once an executor registers the tools the agents name.
      await start(startExecutorWith(env)).ready;
      scheduler = start(startSchedulerChild(env));
      await scheduler.ready;
    });
    afterAll(async () => {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited));
      await sim?.close();
      await rm(dir, { recursive: true, force: true });
      await t.cleanup();
    });

    it('takes up a workflows.yaml created beside the agents file after start, by rename as editors save: the workflow then starts and completes', async () => {
      const refused = await post(await apiOf(scheduler), '/v1/workflows', { workflow: 'solo', input: 'x' });
      expect(refused.status).toBe(422);
      expect(refused.json.error).toMatchObject({
        code: 'UNKNOWN_WORKFLOW',
        message: 'unknown workflow "solo" (not in configuration version 0); declared: (none)',
      });
      await replaceByRename(path.join(dir, 'workflows.yaml'), SOLO.join('\n'));
      const id = await startedOnce(scheduler, 'solo');
      expect(await ended(scheduler, id)).toMatchObject({
        workflow: 'solo',
        status: 'succeeded',
        config_version: 0,
        output: 'done',
      });
    });

    it('starts with a WORKFLOWS_FILE that does not exist yet, in a folder that does not exist yet, and takes the file up once it is created', async () => {
      const file = path.join(dir, 'later', 'flows.yaml');
      const other = start(startSchedulerChild({ ...env, WORKFLOWS_FILE: file, LOG_LEVEL: 'info' }));
      await other.ready;
      expect(await logged(other, 'no workflows file yet')).toContain(file);
      await mkdir(path.dirname(file));
      await writeFile(file, SOLO.join('\n').replace('name: solo', 'name: later'));
      const id = await startedOnce(other, 'later');
      expect(await ended(other, id)).toMatchObject({ workflow: 'later', status: 'succeeded' });
      expect(other.proc.exitCode).toBeNull();
    });

    it('refuses a workflows file replaced with problems, logging every problem, and the workflows in force still start', async () => {
      await replaceByRename(path.join(dir, 'workflows.yaml'), BROKEN);
      const line = await logged(scheduler, 'changed workflows file refused');
      expectBothProblems(line);
      const base = await apiOf(scheduler);
      const ring = await post(base, '/v1/workflows', { workflow: 'ring', input: 'x' });
      expect(ring.status).toBe(422);
      expect(ring.json.error?.message).toBe(
        'unknown workflow "ring" (not in configuration version 0); declared: solo',
      );
      expect((await post(base, '/v1/workflows', { workflow: 'solo', input: 'x' })).status).toBe(201);
      // Repaired: the agents file is read together with it, and refused while it is broken.
      await replaceByRename(path.join(dir, 'workflows.yaml'), SOLO.join('\n'));
    });

    it('takes up an agents file replaced by rename even when the new file keeps the old modification time', async () => {
      const base = await apiOf(scheduler);
      const before = await post(base, '/v1/runs', { agent: 'late_agent', input: 'hello' });
      expect(before.status).toBe(422);
      expect(before.json.error?.code).toBe('UNKNOWN_AGENT');
      const agents = await readFile(TEST_AGENTS, 'utf8');
      await replaceByRename(
        agentsFile,
        `${agents.trimEnd()}\n  - name: late_agent\n    tools: [query_weather]\n`,
        SAME_MTIME,
      );
      await until(scheduler, 'agents', 'late_agent');
      const run = await post(base, '/v1/runs', { agent: 'late_agent', input: 'hello' });
      expect(run.status, JSON.stringify(run.json)).toBe(201);
      expect(run.json).toMatchObject({ agent: 'late_agent' });
    });

    it('treats a removed workflows file as no workflows, and keeps the agents in force while the agents file is gone', async () => {
      await rm(path.join(dir, 'workflows.yaml'));
      await until(scheduler, 'workflows', 'solo', false);
      expect(await declared(scheduler, 'workflows')).toEqual([]);
      const agents = await readFile(agentsFile, 'utf8');
      await rm(agentsFile);
      expect(await logged(scheduler, 'changed agents file refused')).toContain('cannot read agents file');
      expect(await declared(scheduler, 'agents')).toContain('late_agent');
      await writeFile(agentsFile, agents.replace('  - name: late_agent', '  - name: last_agent'));
      await until(scheduler, 'agents', 'last_agent');
      expect(await declared(scheduler, 'agents')).not.toContain('late_agent');
    });

    it('refuses a workflows file created with problems, logging every problem, and still declares no workflow', async () => {
      const from = scheduler.output().length;
      await replaceByRename(path.join(dir, 'workflows.yaml'), BROKEN);
      const line = await logged(scheduler, 'changed workflows file refused', from);
      expectBothProblems(line);
      expect(await declared(scheduler, 'workflows')).toEqual([]);
      expect(await declared(scheduler, 'agents')).toContain('last_agent');
    });
  },
);
