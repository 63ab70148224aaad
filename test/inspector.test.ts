import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { FULL_KEY, LIMITED_KEY, TEST_MODELS, startApiHarness, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOTS = path.resolve(import.meta.dirname, '..', 'test-results', 'screenshots');
const REASONING = 'Look up the weather first, then answer.';

/** The API with the inspector, runs of every kind, and the session cookie of a login done with fetch. */
async function startInspector() {
  await (buildUi as () => Promise<void>)();
  const h = await startApiHarness(
    { allowedModels: [...TEST_MODELS, 'inspect'] },
    { WORKFLOWS_FILE: WORKFLOWS_FIXTURE },
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

async function login(h: ApiHarness, key: string): Promise<string> {
  const res = await fetch(`${h.url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key }),
  });
  expect(res.status).toBe(204);
  return (res.headers.get('set-cookie') ?? '').split(';')[0]!;
}

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

    const out = await fetch(`${h.url}/ui/logout`, { method: 'POST', headers: { cookie: full } });
    expect(out.status).toBe(204);
    expect((await fetch(`${h.url}/ui/api/me`, { headers: { cookie: full } })).status).toBe(401);
  });
});

describe.skipIf(!HAVE_CHROMIUM)(
  `run inspector in headless Chromium${HAVE_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`}`,
  () => {
    let h: ApiHarness;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const shot = (name: string) =>
      page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      h = await startInspector();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
      context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
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

    it('opens a finished run, expands a tool call and reads the result exactly as the model saw it', async () => {
      const created = await h.call('POST', '/v1/runs', {
        body: {
          agent: 'test_agent',
          // Two tools named in sequence: a multi-step request, so the run asks for a plan (the task stack).
          input: 'Check the weather in Hangzhou, then the status of order ORD-123456',
          model: 'inspect',
          metadata: { user_id: 'ada' },
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
      await call.locator('summary').click();
      const result = call.locator('.code').filter({ hasText: 'Result (as the model saw it)' }).locator('pre');
      expect(JSON.parse(await result.innerText())).toEqual(weather.result);
      const args = call.locator('.code').filter({ hasText: 'Arguments' }).locator('pre');
      expect(JSON.parse(await args.innerText())).toEqual({ city: '杭州' });
      const unknown = run.steps.find((s: { tool: string }) => s.tool === 'no_such_tool');
      const local = page.locator(`details[data-call="${unknown.tool_call_id}"] summary`);
      await expect.poll(() => local.innerText()).toMatch(/no_such_tool\s+error\s+local/);
      await page.getByText('Reasoning').click();
      await page.getByText(REASONING).waitFor();
      await expect.poll(() => page.locator('aside .stack li.done').count()).toBe(2);
      await shot('run');
    });

    it('approves a parked call from the page and shows the run resuming live to its end', async () => {
      const runId = (
        await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input: 'sensitive', model: 'approval' },
        })
      ).json.run_id as string;
      await finished(h, runId, ['awaiting_approval']);
      await page.goto(`${h.url}/ui#/approvals`);
      const inbox = page.locator('.approval').filter({ hasText: runId });
      await inbox.waitFor();
      await shot('approvals');
      await inbox.getByRole('link', { name: runId }).click();
      await page.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('awaiting approval');
      await page.getByRole('button', { name: 'Approve' }).click();
      // The same page, never reloaded: the event stream brings the decision and the rest of the run.
      await page.getByText(/Approved\s+needs_approval\s+by tester/).waitFor();
      await page.getByText('Run finished:').waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('succeeded');
      expect((await h.call('GET', `/v1/runs/${runId}`)).json.status).toBe('succeeded');
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
      await shot('runs');
    });

    it('shows agents with their tools, breaker states and error rates', async () => {
      await page.goto(`${h.url}/ui#/agents`);
      const row = page
        .locator('.agent')
        .filter({ hasText: 'test_agent' })
        .locator('tr[data-tool="query_weather"]');
      await row.waitFor();
      expect(await row.innerText()).toMatch(/closed/);
      await expect
        .poll(async () => Number((await row.locator('td').nth(4).innerText()).trim()))
        .toBeGreaterThan(0);
      await shot('agents');
    });

    it("shows a workflow's nodes by depth, the watchdog's firing, and links each node to its run", async () => {
      // stock → order: the watchdog gives stock its default after 1.5 s, then order runs on it.
      const started = await h.client.createWorkflow({ workflow: 'late_with_default', input: 'restock' });
      const done = await h.client.waitForWorkflow(started.workflow_id, { timeoutMs: 30_000 });
      expect(done.status).toBe('succeeded');
      await page.goto(`${h.url}/ui#/runs`);
      await page.getByRole('link', { name: 'Workflows' }).click();
      const row = page.locator('table.workflows tbody tr').filter({ hasText: started.workflow_id });
      await expect.poll(() => row.innerText()).toMatch(/late_with_default\s+succeeded/);
      await shot('workflows');
      await row.getByRole('link', { name: started.workflow_id }).click();
      const nodes = page.locator('table.nodes tbody tr');
      await expect
        .poll(() => nodes.allInnerTexts())
        .toEqual([
          expect.stringMatching(/^0\s+stock\s+test_agent\s+—\s+defaulted\s+low confidence/),
          expect.stringMatching(
            /^1\s+order\s+test_agent\s+stock\s+succeeded\s+low confidence\s+inputs: stock/,
          ),
        ]);
      expect(await nodes.nth(0).locator('td.output').innerText()).toContain('no stock data');
      await page.getByText(/Watchdog fired on node stock after 1\.5 s/).waitFor();
      await page.getByText('Workflow finished:').waitFor();
      expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
      await shot('workflow');
      const order = done.nodes.find((n) => n.id === 'order')!;
      await nodes.nth(1).getByRole('link', { name: order.run_id! }).click();
      await page.getByText('Run finished:').waitFor();
      expect(page.url()).toContain(`#/runs/${order.run_id!}`);
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('succeeded');
    });

    it("shows the watchdog's abort report of a workflow whose node timed out with on_timeout: abort", async () => {
      const started = await h.client.createWorkflow({ workflow: 'late_aborts', input: 'restock' });
      await page.goto(`${h.url}/ui#/workflows/${started.workflow_id}`);
      // Opened while it runs: the abort arrives over the event stream.
      await page.getByText(/Abort report: stock timed out after 1\.5 s/).waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('aborted');
      await page.getByText(/Watchdog fired on node stock after 1\.5 s:\s*abort/).waitFor();
      const report = (await h.client.getWorkflow(started.workflow_id)).report!;
      expect(await page.locator('.box.warn p').innerText()).toBe(report.text);
      await shot('workflow-aborted');
    });

    it('cancels a running workflow from its page and shows it cancelled live', async () => {
      const started = await h.client.createWorkflow({ workflow: 'hangs', input: 'wait' });
      await page.goto(`${h.url}/ui#/workflows/${started.workflow_id}`);
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('running');
      await page.getByRole('button', { name: 'Cancel' }).click();
      // The same page, never reloaded: the event stream brings the end.
      await page.getByText('Cancellation requested').waitFor();
      await expect.poll(() => page.locator('h1 .badge').innerText()).toBe('cancelled');
      expect((await h.client.getWorkflow(started.workflow_id)).reason).toBe('cancel_requested');
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
