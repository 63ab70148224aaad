import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunVariant } from '@agent-reach/protocol';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { login } from './helpers/inspector.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE_SOURCE = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe.skipIf(!existsSync(CHROMIUM))("the inspector shows a run's variant (headless Chromium)", () => {
  let h: ApiHarness;
  let browser: Browser;
  beforeAll(async () => {
    await (buildUi as () => Promise<void>)();
    h = await startApiHarness();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("names the variant among the run's facts with the keys it overrides, shows its overrides, and stays axe-core clean", async () => {
    const variant: RunVariant = {
      name: 'inspected-variant',
      overrides: {
        instructions: 'Answer briefly.',
        tools: { noop: { description: 'Does nothing at all.' } },
      },
    };
    const runId = await h.control.start({ agent: 'test_agent', input: 'hello', variant });
    const plainId = await h.control.start({ agent: 'test_agent', input: 'hello' });
    expect(await h.control.wait(runId, 30_000)).toMatchObject({ status: 'succeeded' });
    expect(await h.control.wait(plainId, 30_000)).toMatchObject({ status: 'succeeded' });
    const [name, value] = (await login(h, FULL_KEY)).split('=') as [string, string];
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name, value, url: h.url }]);
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);

    await page.goto(`${h.url}/ui#/runs/${runId}`);
    await page.getByText('Run finished:').waitFor();
    expect(await page.locator('dl.facts').innerText()).toMatch(
      /Variant\s+inspected-variant\s+overrides instructions, tools/,
    );
    const box = page.locator('.box.variant');
    // The label is set in capitals by the stylesheet.
    expect((await box.innerText()).toLowerCase()).toContain(
      'variant inspected-variant: overrides of the agent for this run',
    );
    expect(await box.innerText()).toContain('Answer briefly.');
    // Its raw view holds every override, the tool's too.
    await box.getByRole('button', { name: /^Raw view of Variant/ }).click();
    expect(await box.locator('pre.raw').innerText()).toContain('"description": "Does nothing at all."');
    if ((await page.evaluate('typeof window.axe')) === 'undefined') await page.evaluate(await AXE_SOURCE);
    const found = await page.evaluate(`axe
      .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
      .then((r) => JSON.stringify(r.violations.map((v) => v.id)))`);
    expect(JSON.parse(found as string)).toEqual([]);

    // A run without a variant shows neither.
    await page.goto(`${h.url}/ui#/runs/${plainId}`);
    await page.getByText('Run finished:').waitFor();
    expect(await page.locator('dl.facts').innerText()).not.toContain('Variant');
    expect(await page.locator('.box.variant').count()).toBe(0);
    await context.close();
  });
});
