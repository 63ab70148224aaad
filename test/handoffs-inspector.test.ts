import path from 'node:path';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { login } from './helpers/inspector.js';
import { ROOT } from './helpers/processes.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HANDOFF_AGENTS = path.join(ROOT, 'test/fixtures/handoff-agents.yaml');

describe.skipIf(!existsSync(CHROMIUM))("the inspector shows a run's handoffs (headless Chromium)", () => {
  let h: ApiHarness;
  let browser: Browser;
  beforeAll(async () => {
    await (buildUi as () => Promise<void>)();
    h = await startApiHarness(
      {},
      { AGENTS_FILE: HANDOFF_AGENTS, ALLOWED_MODELS: 'echo,handoff-technical,handoff-frontdesk' },
    );
    h.sim.addScenario({
      name: 'inspector-handoffs',
      turns: [
        { tool_calls: [{ name: 'transfer_to_billing', arguments: {} }] },
        { tool_calls: [{ name: 'transfer_to_technical', arguments: {} }] },
        { content: 'technical answered' },
      ],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it('draws each handoff in the timeline, naming both agents and what was kept, and as a mark in the waterfall', async () => {
    const runId = await h.control.start({ agent: 'triage', input: 'help me', model: 'inspector-handoffs' });
    expect(await h.control.wait(runId, 30_000)).toMatchObject({ status: 'succeeded' });
    const [name, value] = (await login(h, FULL_KEY)).split('=') as [string, string];
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name, value, url: h.url }]);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${h.url}/ui#/runs/${runId}`);
    await page.getByText('Run finished:').waitFor();
    const rows = page.locator('li.ev.handoff');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).innerText()).toMatch(
      /Handoff\s+triage\s+→\s+billing.*handoff 1 · kept the whole conversation/s,
    );
    expect(await rows.nth(1).innerText()).toMatch(/billing\s+→\s+technical.*kept a summary/s);
    // The facts name the agent the run started with and the one in charge now.
    expect(await page.locator('dl.facts').innerText()).toMatch(
      /triage\s+→ in charge now:\s+technical\s+\(2 handoffs\)/,
    );
    const marks = page.locator('[data-span="mark handoff"]');
    expect(await marks.count()).toBe(2);
    expect(await marks.nth(1).innerText()).toContain('Handoff billing → technical');
    await context.close();
  });
});
