import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowView } from '@agent-reach/protocol';
import { workflowView } from '@agent-reach/scheduler/internal';
import { createAjv } from '@agent-reach/shared';
import { ROOT } from './helpers/processes.js';
import { runCli } from './helpers/cli.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { WORKFLOW_MODELS, WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

describe('agent-reach CLI: workflows and config check of the workflows file', { timeout: 90_000 }, () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const cli = async (env: Record<string, string>, ...args: string[]) =>
    runCli({ ...testEnv(h.prefix, h.sim), ALLOWED_MODELS: WORKFLOW_MODELS, ...env }, args);
  beforeAll(async () => {
    h = await startRunsHarness({ WORKFLOWS_FILE: WORKFLOWS_FIXTURE });
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => h.close());

  it("refuses the seeds' cyclic workflow in config check, naming the cycle in order", async () => {
    const res = await cli(
      {
        AGENTS_FILE: path.join(ROOT, 'test/fixtures/workflow-cycle-agents.yaml'),
        WORKFLOWS_FILE: path.join(ROOT, 'test/fixtures/workflow-cycle.yaml'),
        TOOL_MODULES: '',
      },
      'config',
      'check',
    );
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(
      /problem: .*workflow-cycle\.yaml: workflow "purchase": depends_on has a cycle: procurement → inventory → finance → procurement/,
    );
  });

  it('lists a misspelt field, an unknown tool, an unknown agent, a cycle and a model not allowed of one file at once, in config check and config apply', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'config-problems-'));
    try {
      const fleet = path.join(dir, 'fleet.yaml');
      await writeFile(
        fleet,
        [
          'agents:',
          '  - name: planner',
          '    tols: [query_weather]',
          '  - name: helper',
          '    tools: [query_wether]',
          'workflows:',
          '  - name: trip',
          '    nodes:',
          '      - { id: look, agent: plannr }',
          "      - { id: p, agent: helper, depends_on: [q], input: '{{nodes.q.output}}' }",
          "      - { id: q, agent: helper, depends_on: [p], input: '{{nodes.p.output}}', model: gpt-5-turbo }",
          '',
        ].join('\n'),
      );
      const expected = [
        `problem: ${fleet}: agent "planner": unknown field "tols" (did you mean "tools"?)`,
        `problem: ${fleet}: agent "helper": tools[0] "query_wether" is not a registered tool (did you mean "query_weather"?)`,
        `problem: ${fleet}: workflow "trip": node "look": agent "plannr" is not declared in the agents file (did you mean "planner"?)`,
        `problem: ${fleet}: workflow "trip": node "q": model "gpt-5-turbo" is not an allowed model (ALLOWED_MODELS: ${WORKFLOW_MODELS.split(',').join(', ')})`,
        `problem: ${fleet}: workflow "trip": depends_on has a cycle: p → q → p (each waits on the next, so none could ever start)`,
      ];
      const check = await cli({ AGENTS_FILE: fleet }, 'config', 'check');
      expect(check.stderr.trim().split('\n')).toEqual(expected);
      expect(check.code).toBe(4);
      const apply = await cli({}, 'config', 'apply', fleet);
      expect(apply.stderr.trim().split('\n')).toEqual([
        ...expected,
        'refused: nothing was published; processes keep their local agents file',
      ]);
      expect(apply.code).toBe(4);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('prints each workflow of a valid file in config check', async () => {
    const res = await cli({ WORKFLOWS_FILE: WORKFLOWS_FIXTURE }, 'config', 'check');
    expect(res.stdout).toMatch(
      /workflow diamond: a \(test_agent\); b \(test_agent after a\); c \(test_agent after a\); d \(test_agent after b, c\)/,
    );
    expect(res.code).toBe(0);
  });

  it('starts a workflow, waits for it and shows each node with its run; lists and cancels by id', async () => {
    const env = { WORKFLOWS_FILE: WORKFLOWS_FIXTURE };
    const started = await cli(env, 'workflows', 'start', 'diamond', 'restock', 'the', 'shop', '--wait');
    expect(started.stderr).toBe('');
    const id = /started (\S+)/.exec(started.stdout)?.[1] ?? '';
    expect(started.stdout).toMatch(new RegExp(`workflow ${id}  diamond  status succeeded \\(completed\\)`));
    expect(started.stdout).toMatch(new RegExp(`d {16}succeeded  test_agent after b, c  run ${id}\\.d`));
    expect(started.stdout).toMatch(/output: d saw \[combine \(b saw/);
    expect(started.code).toBe(0);
    const ls = await cli(env, 'workflows', 'ls', '--status', 'succeeded');
    expect(ls.stdout).toContain(id);
    const json = await cli(env, 'workflows', 'ls', '--json', '--workflow', 'diamond');
    expect(JSON.parse(json.stdout.trim().split('\n')[0] ?? '{}')).toMatchObject({
      workflow_id: id,
      workflow: 'diamond',
      status: 'succeeded',
    });
    const cancel = await cli(env, 'workflows', 'cancel', id);
    expect(cancel.stderr).toMatch(/already ended \(succeeded\)/);
    expect(cancel.code).toBe(1);
    expect((await cli(env, 'workflows', 'show', 'wf_unknown')).code).toBe(3);
  });

  it('prints a workflow with workflows show --json as the API document of GET /v1/workflows/{id}', async () => {
    const workflows = h.schedulers[0]!.workflows;
    const { workflowId } = await workflows.start({ workflow: 'diamond', input: 'as json' });
    const record = await workflows.wait(workflowId, 60_000);
    const shown = await cli({ WORKFLOWS_FILE: WORKFLOWS_FIXTURE }, 'workflows', 'show', workflowId, '--json');
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    const document = JSON.parse(shown.stdout) as unknown;
    const validate = createAjv().compile(WorkflowView);
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
    expect(document).toEqual(workflowView(record));
    expect(document).toMatchObject({ workflow_id: workflowId, workflow: 'diamond', status: 'succeeded' });
  });

  it('marks a workflow low_confidence in workflows ls, and each node after a defaulted one in workflows show', async () => {
    const workflows = h.schedulers[0]!.workflows;
    const { workflowId } = await workflows.start({ workflow: 'chain', input: 'count' });
    await workflows.wait(workflowId, 60_000);
    const env = { WORKFLOWS_FILE: WORKFLOWS_FIXTURE };
    const ls = await cli(env, 'workflows', 'ls', '--workflow', 'chain');
    expect(ls.stdout).toMatch(new RegExp(`${workflowId} +chain +succeeded +\\S+ {2}low_confidence`));
    const json = await cli(env, 'workflows', 'ls', '--json', '--workflow', 'chain');
    expect(JSON.parse(json.stdout.trim().split('\n')[0] ?? '{}')).toMatchObject({
      workflow_id: workflowId,
      low_confidence: true,
    });
    const shown = await cli(env, 'workflows', 'show', workflowId);
    expect(shown.stdout).toMatch(/ {2}a +defaulted +test_agent +run \S+\.a {2}low_confidence {2}\(timeout\)/);
    expect(shown.stdout).toMatch(
      / {2}b +succeeded +test_agent after a +run \S+\.b {2}low_confidence \(from a\)/,
    );
    expect(shown.stdout).toMatch(
      / {2}c +succeeded +test_agent after b +run \S+\.c {2}low_confidence \(from a\)/,
    );
  });
});
