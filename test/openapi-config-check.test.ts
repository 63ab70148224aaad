import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { startPlatform } from './helpers/platform.js';
import { waitFor } from './helpers/redis.js';

/** A commits API document; `broken` makes it invalid OpenAPI as a hand-written one often is. */
function changesDocument(broken: boolean) {
  return {
    openapi: '3.1.0',
    info: broken ? { title: 'Changes' } : { title: 'Changes', version: '1' },
    paths: {
      '/commits': {
        get: {
          operationId: 'listCommits',
          parameters: [{ name: 'q', in: broken ? 'querystring' : 'query', schema: { type: 'string' } }],
          responses: { '200': { description: 'the commits' } },
        },
      },
      '/commits/{sha}': {
        get: {
          operationId: 'getCommit',
          parameters: [{ name: 'sha', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '200': { description: 'the commit' } },
        },
      },
    },
  };
}

describe('config check reads each OpenAPI document with a validator and checks operations against it', () => {
  let dir: string;
  let server: ReturnType<typeof createServer>;
  let url: string;
  /** An agents file whose agent lists changes__listCommits, from a source listing `operations`. */
  const agentsFile = (name: string, document: string, operations: string[]) => {
    const file = path.join(dir, `${name}.yaml`);
    const config = {
      agents: [{ name: 'changes_agent', tools: ['changes__listCommits'] }],
      tool_groups: {
        changes: {
          openapi: [{ name: 'changes', document, base_url: 'http://127.0.0.1:1', operations }],
        },
      },
    };
    writeFileSync(file, JSON.stringify(config, null, 2));
    return file;
  };
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openapi-check-'));
    writeFileSync(path.join(dir, 'broken.json'), JSON.stringify(changesDocument(true)));
    writeFileSync(path.join(dir, 'good.json'), JSON.stringify(changesDocument(false)));
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(changesDocument(true)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('suggests the operation for a typo in operations, not a rename of the agent tool, and names what makes the document invalid', async () => {
    const file = agentsFile('typo', './broken.json', ['listComits']);
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check']);
    expect(out.stderr).toContain(
      `${file}: openapi source "changes" (tool group "changes"): operation "listComits" is not in document ./broken.json (did you mean "listCommits"?)`,
    );
    expect(out.stderr).toContain(
      `${file}: agent "changes_agent": tools[0] "changes__listCommits" is none of the operations OpenAPI source "changes" (tool_groups.changes) lists (listComits)`,
    );
    expect(out.stderr).not.toContain('changes__listComits');
    expect(out.stderr).toContain(
      `document ./broken.json is not valid OpenAPI: must have required property 'version'`,
    );
    expect(out.stderr).toMatch(
      /document \.\/broken\.json is not valid OpenAPI: must be equal to one of the allowed values \(query, header, path, cookie\) at "in": "querystring"/,
    );
    expect(out.code).toBe(4);
  });

  it('passes a valid document whose operations the agent lists, naming the tools it makes', async () => {
    const out = await runCli({ AGENTS_FILE: agentsFile('good', './good.json', ['listCommits']) }, [
      'config',
      'check',
    ]);
    expect(out.stdout).toContain('openapi source changes: 1 tool(s) (changes__listCommits)');
    expect(out.stdout).toContain('no problems found');
    expect(out.code).toBe(0);
  });

  it('reads a document at a URL only with --probe', async () => {
    const file = agentsFile('remote', url, ['listCommits']);
    const offline = await runCli({ AGENTS_FILE: file }, ['config', 'check']);
    expect(offline.stdout).toContain(
      `openapi source changes: document ${url} not read (config check --probe reads URLs)`,
    );
    expect(offline.code).toBe(0);
    const probed = await runCli({ AGENTS_FILE: file }, ['config', 'check', '--probe']);
    expect(probed.stderr).toContain(
      `document ${url} is not valid OpenAPI: must have required property 'version'`,
    );
    expect(probed.code).toBe(4);
  });

  it('has the executor report an invalid document on load and still serve what it can read', async () => {
    const platform = await startPlatform({
      AGENTS_FILE: agentsFile('load', './broken.json', ['listCommits', 'getCommit']),
    });
    try {
      const [loaded] = platform.executor.openApi.status();
      expect(loaded?.tools).toEqual(['changes__getCommit']);
      // A parameter in no place OpenAPI 3.0 or 3.1 has is not sent anywhere by guess: its operation is left out.
      expect(loaded?.problems).toContain(
        'openapi source "changes" (tool group "changes"): operation "listCommits" cannot be a tool: its parameter "q" is in "querystring", which OpenAPI 3.0 and 3.1 do not have (path, query, header, cookie)',
      );
      // Validation runs beside the loading: its problems join the source's status once known.
      const problems = await waitFor(
        () => {
          const found = platform.executor.openApi.status()[0]?.problems ?? [];
          return found.some((p) => p.includes('is not valid OpenAPI')) ? found : undefined;
        },
        20_000,
        'the validation problems',
      );
      expect(problems).toContain(
        `openapi source "changes" (tool group "changes"): document ./broken.json is not valid OpenAPI: must have required property 'version' at "info": { "title": "Changes" } (version is missing here)`,
      );
    } finally {
      await platform.close();
    }
  });
});
