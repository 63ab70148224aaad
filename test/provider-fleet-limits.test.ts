import { writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { FULL_KEY, request } from './helpers/api.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { startSchedulerChild, type Child } from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

/** The provider's declared limits: one request in flight, three starts a second, across the fleet. */
const RATE_MAX = 3;
const WINDOW_MS = 1000;
/**
 * How much shorter than the window the checked windows are: a request reaches the provider a little
 * after the limit admitted it, and that delay differs between requests on a loaded machine.
 */
const ARRIVAL_JITTER_MS = 150;
const RUNS = 14;

/**
 * A pass-through in front of the simulator that records when each request arrived and how many were
 * in flight at once (from arrival to the end of the answer).
 */
async function startRecorder(target: URL): Promise<{
  server: Server;
  url: string;
  arrivals: number[];
  maxInFlight: () => number;
}> {
  const arrivals: number[] = [];
  let inFlight = 0;
  let max = 0;
  const server = createServer((req, res) => {
    arrivals.push(Date.now());
    inFlight += 1;
    max = Math.max(max, inFlight);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => {
          inFlight -= 1;
        });
      },
    );
    upstream.on('error', () => {
      inFlight -= 1;
      res.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/v1`, arrivals, maxInFlight: () => max };
}

describe("a provider's concurrency and rate limits across a fleet of schedulers", () => {
  const t = testRedis();
  let sim: LlmSim;
  let recorder: Awaited<ReturnType<typeof startRecorder>>;
  const schedulers: Child[] = [];
  const apis: string[] = [];

  beforeAll(async () => {
    sim = await startLlmSim({
      scenarios: [{ name: 'answer', latency_ms: 150, turns: [{ content: 'done' }] }],
    });
    recorder = await startRecorder(new URL(sim.url));
    const agentsFile = writeAgentsFile({
      agents: [{ name: 'limited_agent', tools: [], model: 'limited/answer' }],
    });
    const providersFile = path.join(path.dirname(agentsFile), 'providers.yaml');
    writeFileSync(
      providersFile,
      JSON.stringify({
        providers: [
          {
            name: 'limited',
            base_url: recorder.url,
            concurrency: 1,
            rate: { max: RATE_MAX, per: 'second' },
            models: ['answer'],
          },
        ],
      }),
    );
    for (let i = 0; i < 2; i++)
      schedulers.push(
        startSchedulerChild({
          REDIS_URL,
          AR_KEY_PREFIX: t.prefix,
          AGENTS_FILE: agentsFile,
          PROVIDERS_FILE: providersFile,
          OPENAI_API_KEY: 'test',
          OPENAI_BASE_URL: sim.url,
          SCHEDULER_METRICS_PORT: '0',
          API_KEYS: `tester:${FULL_KEY}`,
          API_PORT: '0',
          API_HOST: '127.0.0.1',
          LLM_TIMEOUT_MS: '20000',
        }),
      );
    for (const s of schedulers) apis.push(String((await s.ready).apiUrl));
  }, 60_000);

  afterAll(async () => {
    for (const s of schedulers) s.kill();
    await Promise.all(schedulers.map((s) => s.exited));
    await new Promise((resolve) => recorder?.server.close(resolve));
    await sim?.close();
    await t.cleanup();
  });

  it('holds the declared rate and one request in flight across two schedulers, and every waiting run still finishes', async () => {
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      const api = apis[i % apis.length] as string;
      const res = await request(api, 'POST', '/v1/runs', {
        body: { agent: 'limited_agent', input: `run ${i}` },
      });
      expect(res.status, res.text).toBe(201);
      ids.push(res.json.run_id as string);
    }
    for (const id of ids) {
      const run = await waitFor(
        async () => {
          const v = (await request(apis[0] as string, 'GET', `/v1/runs/${id}`)).json;
          return ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(v.status) ? v : undefined;
        },
        60_000,
        `run ${id} to end`,
      );
      expect(run.status, JSON.stringify(run.error ?? run)).toBe('succeeded');
    }
    const arrivals = [...recorder.arrivals].sort((a, b) => a - b);
    expect(arrivals.length).toBe(RUNS);
    const busiest = Math.max(
      ...arrivals.map(
        (from) => arrivals.filter((at) => at >= from && at < from + WINDOW_MS - ARRIVAL_JITTER_MS).length,
      ),
    );
    expect(busiest).toBeLessThanOrEqual(RATE_MAX);
    expect(recorder.maxInFlight()).toBe(1);
  }, 120_000);
});
