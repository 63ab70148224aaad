import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script of the scheduler package (no declarations).
import { buildUi } from '../packages/scheduler/scripts/build-ui.mjs';
import { addScenarios, AGENTS, MODELS, ofType } from './helpers/agent-tools.js';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe.skipIf(!existsSync(CHROMIUM))(
  'the inspector links a parent run and its child runs (headless Chromium)',
  () => {
    let h: ApiHarness;
    let browser: Browser;
    beforeAll(async () => {
      await (buildUi as () => Promise<void>)();
      h = await startApiHarness({}, { AGENTS_FILE: writeAgentsFile(AGENTS), ...MODELS });
      addScenarios(h.sim);
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await h?.close();
    });

    it("shows the child run in the parent's timeline and call, and the parent on the child's page", async () => {
      const parentId = await h.control.start({ agent: 'planner', input: 'plan it' });
      const started = await waitFor(
        async () => ofType(await h.control.events(parentId), 'child_run_started')[0],
        15_000,
        'the child run to start',
      );
      const child = await waitFor(
        async () => {
          const r = (await h.call('GET', `/v1/runs/${started.child_run_id}`, { key: FULL_KEY })).json;
          return r.pending_approvals?.length ? r : undefined;
        },
        15_000,
        'the child to wait for a person',
      );
      await h.control.decide({
        runId: started.child_run_id,
        toolCallId: child.pending_approvals[0].tool_call_id,
        decision: 'approved',
      });
      await h.control.wait(parentId, 30_000);
      const login = await fetch(`${h.url}/ui/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: FULL_KEY }),
      });
      const [name, value] = (login.headers.get('set-cookie') ?? '').split(';')[0]!.split('=') as [
        string,
        string,
      ];
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addCookies([{ name, value, url: h.url }]);
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(`${h.url}/ui#/runs/${parentId}`);
      await page.getByText('Run finished:').waitFor();
      // The timeline's child-run line, the call's summary and the facts each link the child's page.
      const links = page.locator(`a.child-run[href="#/runs/${started.child_run_id}"]`);
      expect(await links.count()).toBe(3);
      await page.getByText('Child run', { exact: true }).waitFor();
      await links.first().click();
      await page.locator('h1').getByText(started.child_run_id).waitFor();
      const parentLink = page.locator(`a.parent-run[href="#/runs/${parentId}"]`);
      await parentLink.waitFor();
      expect(await page.locator('dl.facts').innerText()).toContain('called it as');
      await context.close();
    });
  },
);
