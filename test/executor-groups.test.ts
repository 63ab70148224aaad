import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startExecutorWith, startSchedulerChild, type Child } from './helpers/processes.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const API_KEY = `eg-${randomUUID().replace(/-/g, '')}`;

/** A tool module of one group, as plain JavaScript: each call records which process ran it. */
const toolModule = (group: string, tool: string) => `
export default ({ redis, keys }) => [
  {
    name: '${tool}',
    description: 'A tool of the ${group} group only. Test tool.',
    group: '${group}',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    handler: async () => {
      await redis.hset(keys.prefix + ':test:served', '${tool}', String(process.pid));
      return { tool: '${tool}', pid: process.pid };
    },
  },
];
`;

/** The one operation of the files group's HTTP API. */
const FILES_API = {
  openapi: '3.0.3',
  info: { title: 'files', version: '1' },
  paths: {
    '/files': {
      get: {
        operationId: 'listFiles',
        responses: { '200': { description: 'the files' } },
      },
    },
  },
};

/** Both executors read this configuration: each group's tools, and the files group's OpenAPI source. */
const agentsYaml = (filesApiUrl: string) =>
  JSON.stringify({
    agents: [{ name: 'splitter', tools: ['apply_change', 'list_files', 'files_api__listFiles'] }],
    tool_groups: {
      files: {
        openapi: [
          {
            name: 'files_api',
            document: './files.openapi.json',
            base_url: filesApiUrl,
            operations: ['listFiles'],
          },
        ],
      },
    },
  });

// Two executor processes, each with its own folder: its agents file and only its own group's tool module
// (and, for the files group, the OpenAPI document). Neither has the other's files; a scheduler runs the
// agent loop against llm-sim and the model calls a tool of each group in one turn.
describe(
  'executors deployed for disjoint tool groups with disjoint module sets',
  { timeout: 120_000 },
  () => {
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let dir: string;
    let filesApi: Server;
    let filesApiCalls = 0;
    const children: Child[] = [];
    let changes: Child;
    let files: Child;
    let scheduler: Child;

    beforeAll(async () => {
      t = testRedis();
      dir = await mkdtemp(path.join(tmpdir(), 'executor-groups-'));
      filesApi = createServer((_req, res) => {
        filesApiCalls += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(['a.md', 'b.md']));
      });
      await new Promise<void>((resolve) => filesApi.listen(0, '127.0.0.1', resolve));
      const apiUrl = `http://127.0.0.1:${(filesApi.address() as AddressInfo).port}`;
      const folder = async (name: string, tool: string, group: string) => {
        const at = path.join(dir, name);
        await mkdir(at);
        await writeFile(path.join(at, 'agents.yaml'), agentsYaml(apiUrl));
        await writeFile(path.join(at, `${tool}.mjs`), toolModule(group, tool));
        return at;
      };
      const changesDir = await folder('changes', 'apply_change', 'changes');
      const filesDir = await folder('files', 'list_files', 'files');
      await writeFile(path.join(filesDir, 'files.openapi.json'), JSON.stringify(FILES_API));
      sim = await startLlmSim({
        scenarios: [
          {
            name: 'split',
            turns: [
              {
                tool_calls: [
                  { name: 'apply_change', arguments: {} },
                  { name: 'list_files', arguments: {} },
                  { name: 'files_api__listFiles', arguments: {} },
                ],
              },
              { content: 'done' },
            ],
          },
        ],
      });
      const env = (at: string, extra: Record<string, string>) =>
        testEnv(t.prefix, sim, {
          AGENTS_FILE: path.join(at, 'agents.yaml'),
          OPENAI_MODEL: 'split',
          ...extra,
        });
      changes = startExecutorWith(
        env(changesDir, {
          EXECUTOR_GROUPS: 'changes',
          TOOL_MODULES: path.join(changesDir, 'apply_change.mjs'),
        }),
      );
      files = startExecutorWith(
        env(filesDir, { EXECUTOR_GROUPS: 'files', TOOL_MODULES: path.join(filesDir, 'list_files.mjs') }),
      );
      children.push(changes, files);
      await Promise.all([changes.ready, files.ready]);
      scheduler = startSchedulerChild(env(filesDir, { ...apiEnv(API_KEY), TOOL_MODULES: '' }));
      children.push(scheduler);
      await scheduler.ready;
    }, 120_000);
    afterAll(async () => {
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(children.map((c) => c.exited));
      await sim?.close();
      await new Promise((resolve) => filesApi?.close(resolve));
      await rm(dir, { recursive: true, force: true });
      await t?.cleanup();
    });

    it("starts each executor without the other group's module or document, and serves each call from the executor of its group", async () => {
      const base = String((await scheduler.ready).apiUrl).replace('://0.0.0.0:', '://127.0.0.1:');
      const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
      const created = await fetch(`${base}/v1/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ agent: 'splitter', input: 'split the work' }),
      });
      expect(created.status).toBe(201);
      const { run_id: runId } = (await created.json()) as { run_id: string };
      const run = await waitFor(
        async () => {
          const res = await fetch(`${base}/v1/runs/${runId}`, { headers });
          const json = (await res.json()) as { status: string; answer?: string };
          return ['queued', 'running'].includes(json.status) ? undefined : json;
        },
        60_000,
        `run ${runId} to end`,
      );
      expect(run).toMatchObject({ status: 'succeeded', answer: 'done' });
      expect(await t.redis.hgetall(`${t.prefix}:test:served`)).toEqual({
        apply_change: String(changes.proc.pid),
        list_files: String(files.proc.pid),
      });
      expect(filesApiCalls).toBe(1);
      // The changes executor neither read the files group's OpenAPI document (absent from its folder) nor
      // refused the agents' tools it does not serve.
      expect(changes.output()).not.toContain('files_api');
      expect(changes.proc.exitCode).toBeNull();
    });
  },
);
