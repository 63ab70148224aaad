import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { parseDataset } from '@agent-reach/evals';
import type { EvalReport, VariantMetrics } from '@agent-reach/protocol';
import { FULL_KEY, LIMITED_KEY, TEST_MODELS, startApiHarness, type ApiHarness } from './helpers/api.js';
import { login } from './helpers/inspector.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOTS = path.resolve(import.meta.dirname, '..', 'test-results', 'screenshots');
const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The API's models: the test scenarios, and one that answers every turn of a session with its user's words. */
const MODELS = [...TEST_MODELS, 'recall'];

async function startPlayground(): Promise<ApiHarness> {
  await (buildUi as () => Promise<void>)();
  const h = await startApiHarness({ allowedModels: MODELS });
  addCommonScenarios(h.sim);
  h.sim.addScenario({ name: 'recall', turns: [{ content: 'noted: {{ user }}', repeat: true }] });
  return h;
}

/** A request on an inspector session: the cookie, and the inspector's header only when `ui` is set. */
async function onSession(
  h: ApiHarness,
  cookie: string,
  method: string,
  route: string,
  body?: unknown,
  ui = true,
) {
  const res = await fetch(`${h.url}${route}`, {
    method,
    headers: {
      cookie,
      ...(ui ? { 'x-agent-reach-ui': '1' } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json().catch(() => undefined)) as any };
}

const finished = (h: ApiHarness, runId: string) =>
  waitFor(
    async () => {
      const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
      return ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(run?.status) ? run : undefined;
    },
    20_000,
    `run ${runId} to finish`,
  );

describe('the playground starts runs through the API on an inspector session, with its checks', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startPlayground();
  }, 60_000);
  afterAll(async () => h?.close());

  it('offers exactly the models the API accepts, to a session or a key only', async () => {
    const cookie = await login(h, LIMITED_KEY);
    expect((await onSession(h, cookie, 'GET', '/ui/api/models')).json).toEqual({
      models: [...MODELS].sort(),
    });
    expect((await h.call('GET', '/ui/api/models', { key: null })).status).toBe(401);
  });

  it('refuses a run or a session started on an inspector session without the inspector header, and starts it with the header', async () => {
    const cookie = await login(h, FULL_KEY);
    const body = { agent: 'test_agent', input: 'hello', model: 'echo' };
    const forged = await onSession(h, cookie, 'POST', '/v1/runs', body, false);
    expect(forged.status).toBe(403);
    expect(forged.json.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'a request on an inspector session must send x-agent-reach-ui: 1',
    });
    const session = await onSession(h, cookie, 'POST', '/v1/sessions', { agent: 'test_agent' }, false);
    expect(session.status).toBe(403);
    const started = await onSession(h, cookie, 'POST', '/v1/runs', body);
    expect(started.status).toBe(201);
    expect((await finished(h, started.json.run_id as string)).answer).toBe('hello');
  });

  it('refuses a key limited to other agents as the API does, on a session as with the key', async () => {
    const cookie = await login(h, LIMITED_KEY);
    const refused = await onSession(h, cookie, 'POST', '/v1/runs', { agent: 'test_agent', input: 'hi' });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'this key may not use agent "test_agent"',
    });
  });
});

describe.skipIf(!HAVE_CHROMIUM)(
  `the playground and the Evals page in headless Chromium${HAVE_CHROMIUM ? '' : ` (skipped: no Chromium at ${CHROMIUM})`}`,
  { timeout: 60_000 },
  () => {
    let h: ApiHarness;
    let browser: Browser;
    const shot = (name: string, p: Page) =>
      p.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

    /** axe-core's WCAG 2.1 A and AA rules on the page as it stands: each violation's rule and elements. */
    async function expectAccessible(p: Page): Promise<void> {
      // Evaluated through the DevTools protocol, which the page's script-src 'self' does not govern.
      if ((await p.evaluate('typeof window.axe')) === 'undefined') await p.evaluate(await AXE_SOURCE);
      const found = await p.evaluate(`axe
        .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => JSON.stringify(r.violations.map((v) => ({ id: v.id, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }))))`);
      expect(JSON.parse(found as string)).toEqual([]);
    }

    /** A page of its own, signed in with `key`'s session cookie. */
    async function signedIn(key: string, width = 1280, height = 800): Promise<Page> {
      const ctx = await browser.newContext({
        viewport: { width, height },
        locale: 'en-US',
        timezoneId: 'UTC',
        acceptDownloads: true,
        permissions: ['clipboard-read', 'clipboard-write'],
      });
      const [name, value] = (await login(h, key)).split('=') as [string, string];
      await ctx.addCookies([{ name, value, url: h.url }]);
      const p = await ctx.newPage();
      p.setDefaultTimeout(15_000);
      return p;
    }

    /** Three runs for a report's attempts to name. */
    const startRuns = async () => {
      const ids: string[] = [];
      for (const input of ['baseline try', 'aliases try', 'order try']) {
        const created = await h.call('POST', '/v1/runs', {
          body: { agent: 'test_agent', input, model: 'echo' },
        });
        ids.push(created.json.run_id as string);
      }
      return ids;
    };
    /** Posts the report of {@link evalReport} on those runs through the API; its id. */
    const postReport = async (runIds: string[]) => {
      const [baselineRun, variantRun, orderRun] = runIds as [string, string, string];
      const id = `ui-eval-${Date.now()}-${runIds.length}`;
      const posted = await h.call('POST', '/v1/evals', {
        body: evalReport(id, baselineRun, variantRun, orderRun),
      });
      expect(posted.status).toBe(201);
      return id;
    };

    beforeAll(async () => {
      await mkdir(SCREENSHOTS, { recursive: true });
      h = await startPlayground();
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await h?.close();
    });

    it('starts a run from the playground, grows its waterfall while it waits, streams its answer, and saves it as a case the eval command reads', async () => {
      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/playground`);
      await page.getByRole('heading', { name: 'Playground' }).waitFor();
      await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('test_agent');
      // The scenario asks for a call a person approves: the run waits, so the page sees it live.
      await page.getByLabel('Model').selectOption('approval');
      await page.getByLabel('Input').fill('Please do the sensitive thing');
      await expectAccessible(page);
      await page.getByRole('button', { name: 'Start run' }).click();
      const tried = page.locator('article.tried');
      await tried.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
      const runId = (await tried.getAttribute('data-run'))!;
      const rows = tried.locator('.waterfall .wf-row:not(.wf-axis)');
      await expect
        .poll(() => rows.locator('.wf-name').allInnerTexts())
        .toEqual(['Model turn 1', 'Approval: needs_approval']);
      await expectAccessible(page);
      await shot('playground-waiting', page);

      await tried.getByRole('button', { name: 'Approve needs_approval' }).click();
      await tried.getByRole('button', { name: 'Confirm approve' }).click();
      await expect.poll(() => tried.locator('h2 .badge').innerText()).toBe('succeeded');
      const answer = tried.locator('.playground-answer');
      await expect.poll(() => answer.innerText()).toContain('after the decision: true');
      // The answer's text came over the event stream as it was written, before the record had it.
      expect(await answer.locator('.streamed').textContent()).toMatch(/^streamed in \d+ parts?$/);
      await expect
        .poll(() => rows.locator('.wf-name').allInnerTexts())
        .toEqual(['Model turn 1', 'Approval: needs_approval', 'needs_approval', 'Model turn 2']);
      const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
      expect(run).toMatchObject({
        agent: 'test_agent',
        status: 'succeeded',
        metadata: { source: 'playground' },
      });
      expect(await answer.locator('.text').textContent()).toBe(run.answer);

      await tried.getByText('Save as eval case').click();
      await tried.getByLabel('The answer must contain').fill('after the decision: true');
      const shown = await tried.getByLabel('Eval case', { exact: true }).innerText();
      const download = page.waitForEvent('download');
      await tried.getByRole('button', { name: 'Download' }).click();
      const file = await (await download).path();
      const text = readFileSync(file, 'utf8');
      expect(text.trim()).toBe(shown.trim());
      const dataset = parseDataset(text, `playground-${runId}.yaml`);
      expect(dataset.cases).toEqual([
        {
          id: `playground-${runId}`,
          agent: 'test_agent',
          input: 'Please do the sensitive thing',
          model: 'approval',
          expect: {
            status: 'succeeded',
            tools_in_order: ['needs_approval'],
            answer: { contains: ['after the decision: true'] },
          },
        },
      ]);
      await tried.getByLabel('JSONL line').check();
      const line = await tried.getByLabel('Eval case', { exact: true }).innerText();
      expect(parseDataset(line, 'one.jsonl').cases).toEqual(dataset.cases);
      await expectAccessible(page);
      await shot('playground-saved', page);
      await page.context().close();
    });

    it("keeps a session: the second message continues it, and its case carries the first as the session's history", async () => {
      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/playground/test_agent`);
      await page.getByLabel('Model').selectOption('recall');
      await page.getByLabel('Keep a session').check();
      await page.getByLabel('Input').fill('first');
      await page.getByRole('button', { name: 'Start session' }).click();
      await page.locator('article.tried .playground-answer').getByText('noted: first').waitFor();
      await page.getByLabel('Input').fill('second');
      await page.getByRole('button', { name: 'Send' }).click();
      const latest = page.locator('article.tried').first();
      await latest.locator('.playground-answer').getByText('noted: second').waitFor();
      expect(await page.locator('article.tried').count()).toBe(2);
      const runId = (await latest.getAttribute('data-run'))!;
      const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
      const first = (
        await h.call('GET', `/v1/runs/${await page.locator('article.tried').nth(1).getAttribute('data-run')}`)
      ).json;
      expect(run.session_id).toBeDefined();
      expect(run.session_id).toBe(first.session_id);
      // The second turn was asked with the first exchange before it.
      const asked = h.sim.requests.filter((r) => r.scenario === 'recall').at(-1)!;
      const said = (asked.body as { messages: Array<{ role: string; content: string }> }).messages;
      expect(said.map((m) => `${m.role}:${m.content}`)).toEqual(
        expect.arrayContaining(['user:first', 'assistant:noted: first', 'user:second']),
      );
      await latest.getByText('Save as eval case').click();
      const c = parseDataset(await latest.getByLabel('Eval case', { exact: true }).innerText(), 's.yaml')
        .cases[0];
      expect(c).toMatchObject({ input: 'second', history: ['first'], model: 'recall' });
      // Only the latest run draws its waterfall: one table, one set of ids.
      expect(await page.locator('.waterfall').count()).toBe(1);
      await expectAccessible(page);
      await page.context().close();
    });

    it('names what is wrong with an output schema: not JSON in the page, not a usable schema from the API', async () => {
      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/playground/test_agent`);
      await page.getByLabel('Input').fill('hello');
      await page.getByText('Output schema').first().click();
      await page.getByLabel('JSON Schema the answer must match').fill('{"type": ');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText(/^The output schema is not JSON: /)
        .waitFor();
      await page.getByLabel('JSON Schema the answer must match').fill('{"type": "no-such-type"}');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText(/^400 VALIDATION_FAILED: .*output_schema/)
        .waitFor();
      expect(await page.locator('article.tried').count()).toBe(0);
      await page.context().close();
    });

    it("runs a variant of the agent's configuration for a key allowed variants, names a bad one, and saves the command that compares it", async () => {
      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/playground/test_agent`);
      await page.getByLabel('Model').selectOption('echo');
      await page.getByLabel('Input').fill('hello');
      await page.getByText('Variant').first().click();
      const field = page.getByLabel(/^Configuration overrides for this run/);
      await field.fill('{"instructions": ');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText(/^The variant is not JSON: /)
        .waitFor();
      await field.fill('{"instructionz": "Answer in one word."}');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText(/^400 VALIDATION_FAILED: .*instructionz/)
        .waitFor();
      expect(await page.locator('article.tried').count()).toBe(0);

      const overrides = { instructions: "Answer in one word, don't explain." };
      await field.fill(JSON.stringify(overrides));
      await page.getByRole('button', { name: 'Start run' }).click();
      const tried = page.locator('article.tried');
      await expect.poll(() => tried.locator('h2 .badge').innerText()).toBe('succeeded');
      const run = (await h.call('GET', `/v1/runs/${await tried.getAttribute('data-run')}`)).json;
      expect(run.variant).toEqual({ name: 'playground', overrides });
      // The model read the variant's instructions, not the agent's.
      const asked = h.sim.requests.filter((r) => r.scenario === 'echo').at(-1)!;
      const system = (asked.body as { messages: Array<{ role: string; content: string }> }).messages[0]!;
      expect(system.content).toContain(overrides.instructions);
      await tried.getByText('Save as eval case').click();
      const file = `playground-${run.run_id}.yaml`;
      expect(await tried.locator('code.eval-command').innerText()).toBe(
        `agent-reach eval ${file} --variant baseline --variant playground='{"instructions":"Answer in one word, don'\\''t explain."}'`,
      );
      await expectAccessible(page);
      await page.context().close();
    });

    it('cancels a live run from the playground', async () => {
      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/playground/test_agent`);
      await page.getByLabel('Model').selectOption('approval');
      await page.getByLabel('Input').fill('to be cancelled');
      await page.getByRole('button', { name: 'Start run' }).click();
      const tried = page.locator('article.tried');
      await tried.getByRole('heading', { name: 'Waiting for a decision' }).waitFor();
      await tried.getByRole('button', { name: 'Cancel run' }).click();
      await expect.poll(() => tried.locator('h2 .badge').innerText()).toBe('cancelled');
      expect((await h.call('GET', `/v1/runs/${await tried.getAttribute('data-run')}`)).json.status).toBe(
        'cancelled',
      );
      await page.context().close();
    });

    it('offers a limited key its agents only, and shows the refusal the API gives for another agent', async () => {
      const page = await signedIn(LIMITED_KEY);
      await page.goto(`${h.url}/ui#/playground`);
      await expect
        .poll(() => page.getByLabel('Agent').locator('option').allInnerTexts())
        .toEqual(['weather_only']);
      await page.goto(`${h.url}/ui#/playground/test_agent`);
      await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('test_agent');
      await page.getByLabel('Input').fill('hello');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText('403 FORBIDDEN: this key may not use agent "test_agent"')
        .waitFor();
      expect(await page.locator('article.tried').count()).toBe(0);
      // Its own agent, but with a variant: a limited key is not allowed variants unless configured so.
      await page.goto(`${h.url}/ui#/playground/weather_only`);
      await page.getByLabel('Input').fill('rain?');
      await page.getByText('Variant').first().click();
      await page.getByLabel(/^Configuration overrides for this run/).fill('{"instructions": "Be brief."}');
      await page.getByRole('button', { name: 'Start run' }).click();
      await page
        .getByRole('alert')
        .getByText(/^403 FORBIDDEN: this key may not start runs with a variant/)
        .waitFor();
      expect(await page.locator('article.tried').count()).toBe(0);
      await expectAccessible(page);
      await page.context().close();
    });

    it('shows an eval report posted through the API: variants side by side, a chart per metric, a flipped case linked to its run', async () => {
      const runIds = await startRuns();
      const [, variantRun] = runIds as [string, string, string];
      const id = await postReport(runIds);

      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/evals`);
      const row = page.locator(`tr[data-eval="${id}"]`);
      await row.waitFor();
      expect(await row.locator('.chip').allInnerTexts()).toEqual(['baseline 50 %', 'aliases 100 %']);
      await expectAccessible(page);
      await row.getByRole('link', { name: id }).click();

      await page.getByRole('heading', { name: `Eval ${id}` }).waitFor();
      const table = page.getByRole('region', { name: 'Variants side by side' });
      expect(await table.locator('thead th').allInnerTexts()).toEqual(['Metric', 'baseline', 'aliases']);
      expect(await table.locator('tr[data-metric="reach_success"] td').allInnerTexts()).toEqual([
        '50 %',
        '100 %',
      ]);
      expect(await table.locator('tr[data-metric="latency_p95_ms"] td').allInnerTexts()).toEqual([
        '1.5 s',
        '900 ms',
      ]);
      // A chart per metric, each with a bar per variant.
      const charts = page.locator('.metric-charts figure.chart');
      expect(await charts.count()).toBe(12);
      expect(await page.locator('figure[data-chart="reach_success"] rect.bar').count()).toBe(2);
      expect(await page.locator('figure[data-chart="reach_success"] svg').getAttribute('aria-label')).toBe(
        'Reach success: baseline 50 %; aliases 100 %',
      );
      const diff = page.locator('figure[data-chart="reach_success"] .diff');
      expect(await diff.innerText()).toBe('aliases vs baseline: +50 % [+5 %, +80 %] (95 %)');
      expect(await diff.getAttribute('class')).toContain('better');

      const flipped = page.getByRole('region', { name: 'Cases flipped from baseline to aliases' });
      expect(await flipped.locator('tbody tr').count()).toBe(1);
      const flip = flipped.locator('tr[data-case="city-enum"]');
      expect(await flip.locator('.badge').innerText()).toBe('fail → pass');
      // Every case by variant: its verdict, each attempt's run and the checks that failed.
      const byCase = page
        .getByRole('region', { name: 'Cases by variant' })
        .locator('tr[data-case="city-enum"] td');
      expect(await byCase.locator('.badge').allInnerTexts()).toEqual([
        'fail: 0/1 attempts',
        'pass: 1/1 attempts',
      ]);
      expect(await byCase.first().locator('.error-line').innerText()).toBe(
        'arguments: query_weather.city: "Guangzhou Province" is not one of the enum',
      );
      await expectAccessible(page);
      await shot('evals-report', page);
      await flip.getByRole('link', { name: variantRun }).click();
      await page.getByRole('heading', { name: new RegExp(variantRun) }).waitFor();
      expect(page.url()).toContain(`#/runs/${variantRun}`);
      await page.context().close();
    });

    it("shows hostile text of an eval report (case ids, failure messages, a variant's name, overrides, run ids) and of a run's answer in the playground as text: no element, no script runs", async () => {
      const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
      const runIds = await startRuns();
      const report = evalReport(`ui-xss-${Date.now()}`, ...(runIds as [string, string, string]));
      report.dataset.name = XSS;
      const [baseline, variant] = report.variants as [EvalReport['variants'][0], EvalReport['variants'][0]];
      baseline.cases[0]!.id = XSS;
      baseline.cases[0]!.attempts[0]!.failures = [{ check: XSS, message: XSS }];
      baseline.cases[0]!.attempts[0]!.run_id = 'javascript:window.__xss=3';
      variant.overrides = { instructions: XSS, [XSS]: XSS };
      report.comparisons[0]!.variant = XSS;
      report.comparisons[0]!.flipped[0]!.case = XSS;
      report.comparisons[0]!.flipped[0]!.baseline_runs = ['javascript:window.__xss=4'];
      const posted = await h.call('POST', '/v1/evals', { body: report });
      expect(posted.status, posted.text).toBe(201);

      const page = await signedIn(FULL_KEY);
      await page.goto(`${h.url}/ui#/evals/${report.id}`);
      await page.getByRole('heading', { name: `Eval ${report.id}` }).waitFor();
      const section = page.locator('section.eval');
      await section.locator('details.summary summary').first().click();
      expect(await section.locator('img, script').count()).toBe(0);
      const text = await section.innerText();
      expect(text.split(XSS).length - 1).toBeGreaterThanOrEqual(6);
      for (const href of await section
        .locator('a.run-link')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href'))))
        expect(href).toMatch(/^#\/runs\//);
      await section.locator('a.run-link', { hasText: 'javascript:window.__xss=3' }).click();
      expect(await page.evaluate('window.__xss')).toBeUndefined();

      await page.goto(`${h.url}/ui#/playground`);
      await page.getByRole('heading', { name: 'Playground' }).waitFor();
      await expect.poll(() => page.getByLabel('Agent').inputValue()).toBe('test_agent');
      // `recall` answers with the user's words: the answer holds the markup.
      await page.getByLabel('Model').selectOption('recall');
      await page.getByLabel('Input').fill(XSS);
      await page.getByRole('button', { name: 'Start run' }).click();
      const tried = page.locator('article.tried');
      await expect.poll(() => tried.locator('h2 .badge').innerText()).toBe('succeeded');
      await expect.poll(() => tried.locator('.playground-answer').innerText()).toContain(XSS);
      expect(await page.locator('main img, main script').count()).toBe(0);
      expect(await page.evaluate('window.__xss')).toBeUndefined();
      await page.context().close();
    });

    it('fits a phone (390×844) and passes axe-core there: the playground with a saved case, and an eval report', async () => {
      const phone = await signedIn(FULL_KEY, 390, 844);
      const fits = async () =>
        JSON.parse(
          (await phone.evaluate(`JSON.stringify({
            page: document.documentElement.scrollWidth,
            view: window.innerWidth,
            past: [...document.querySelectorAll('body *')]
              .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('nav, .table-wrap, .chart svg, .skip, pre'))
              .slice(0, 5)
              .map((e) => e.tagName + '.' + e.className),
          })`)) as string,
        ) as { page: number; view: number; past: string[] };
      const expectFits = async (what: string) => {
        const size = await fits();
        expect(size.page, `${what} is wider than the screen: ${size.past.join(', ')}`).toBeLessThanOrEqual(
          size.view,
        );
        await expectAccessible(phone);
      };
      await phone.goto(`${h.url}/ui#/playground/test_agent`);
      await phone.getByLabel('Model').selectOption('weather-then-answer');
      await phone.getByLabel('Input').fill('Weather in Hangzhou?');
      await phone.getByRole('button', { name: 'Start run' }).click();
      const tried = phone.locator('article.tried');
      await expect.poll(() => tried.locator('h2 .badge').innerText()).toBe('succeeded');
      await tried.getByText('Save as eval case').click();
      expect(await tried.getByLabel('Eval case', { exact: true }).innerText()).toContain('- "query_weather"');
      await expectFits('the playground');
      await shot('phone-playground', phone);

      const id = await postReport(await startRuns());
      await phone.goto(`${h.url}/ui#/evals/${id}`);
      await phone.locator('tr[data-case="city-enum"]').first().waitFor();
      await expectFits('an eval');
      await shot('phone-eval', phone);
      await phone.context().close();
    });
  },
);

/** The metrics of a variant: `reach` its reach success, the other figures fixed but distinct per variant. */
function metrics(reach: number, p95: number): VariantMetrics {
  return {
    cases: 2,
    attempts: 2,
    reach_success: reach,
    tool_selection_accuracy: reach,
    first_try_valid_args: reach,
    self_healed_args: 0,
    unknown_tool_calls: 0,
    forbidden_calls: 0,
    task_completion: reach,
    steps_mean: 2,
    tokens_total: 120,
    cost_total: 0,
    latency_p50_ms: 400,
    latency_p95_ms: p95,
  };
}

/** A report of two variants where case `city-enum` fails on the baseline and passes with aliases. */
function evalReport(id: string, baselineRun: string, variantRun: string, orderRun: string): EvalReport {
  const attempt = (runId: string, passed: boolean) => ({
    run_id: runId,
    passed,
    failures: passed
      ? []
      : [{ check: 'arguments', message: 'query_weather.city: "Guangzhou Province" is not one of the enum' }],
    steps: 2,
    tokens: 60,
    cost: 0,
    latency_ms: 400,
  });
  return {
    id,
    dataset: { name: 'cities', cases: 2 },
    started_at: new Date(Date.now() - 60_000).toISOString(),
    finished_at: new Date().toISOString(),
    repeat: 1,
    concurrency: 4,
    variants: [
      {
        name: 'baseline',
        overrides: {},
        metrics: metrics(0.5, 1500),
        cases: [
          { id: 'city-enum', attempts: [attempt(baselineRun, false)] },
          { id: 'order', attempts: [attempt(orderRun, true)] },
        ],
      },
      {
        name: 'aliases',
        overrides: { tools: { query_weather: { aliases: { city: { 广州: ['广州省'] } } } } },
        metrics: metrics(1, 900),
        cases: [
          { id: 'city-enum', attempts: [attempt(variantRun, true)] },
          { id: 'order', attempts: [attempt(orderRun, true)] },
        ],
      },
    ],
    comparisons: [
      {
        baseline: 'baseline',
        variant: 'aliases',
        metrics: { reach_success: { baseline: 0.5, variant: 1, diff: 0.5, low: 0.05, high: 0.8 } },
        flipped: [
          {
            case: 'city-enum',
            from: 'fail',
            to: 'pass',
            baseline_runs: [baselineRun],
            variant_runs: [variantRun],
          },
        ],
      },
    ],
  };
}
