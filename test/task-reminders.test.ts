import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedRequest, Scenario } from '@agent-reach/llm-sim';
import type { RunEvent } from '@agent-reach/protocol';
import { renderTimeline } from '@agent-reach/scheduler';
import { startApiHarness, type ApiHarness } from './helpers/api.js';

/** A multi-step request: the intent classifier plans it, so the run has a task stack. */
const INPUT = 'check the weather in 上海, then write the plan to a file';

const PLAN = [
  { title: 'weather in 上海', tool: 'query_weather' },
  { title: 'write the plan to a file', tool: 'write_markdown_file' },
  { title: 'tell the user' },
];
const WEATHER = { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] };

const SCENARIOS: Scenario[] = [
  {
    // Answers after the weather, forgetting the file; reminded, writes it and answers again.
    name: 'tasks-reminded',
    plan: PLAN,
    turns: [
      WEATHER,
      { content: 'It is sunny in 上海.' },
      {
        tool_calls: [
          { name: 'write_markdown_file', arguments: { path: 'reminded/shanghai.md', content: '# 上海\n' } },
        ],
      },
      { content: 'It is sunny in 上海; the plan is in reminded/shanghai.md.' },
    ],
  },
  {
    // Answers after the weather, every time it is asked.
    name: 'tasks-never',
    plan: PLAN,
    turns: [WEATHER, { content: 'It is sunny in 上海.', repeat: true }],
  },
  {
    // Does every step before answering: never reminded.
    name: 'tasks-all-done',
    plan: PLAN,
    turns: [
      WEATHER,
      {
        tool_calls: [
          { name: 'write_markdown_file', arguments: { path: 'done/shanghai.md', content: '# 上海\n' } },
        ],
      },
      { content: 'Done.' },
    ],
  },
];

describe('a final answer given while steps of the task stack are open', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({ allowedModels: SCENARIOS.map((s) => s.name) });
    for (const s of SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => h?.close());

  const eventsOf = async (runId: string): Promise<RunEvent[]> =>
    (await h.control.events(runId)).map((e) => e.event);
  /** The model turns (not the plan) a run asked for, in order. */
  const turnsOf = (model: string): RecordedRequest[] =>
    h.sim.requests.filter((r) => {
      const body = r.body as { model?: string; tools?: unknown[] };
      return body.model === model && (body.tools?.length ?? 0) > 0;
    });
  const lastMessage = (r: RecordedRequest) =>
    (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!;

  it('sends the model back once naming the open step, and succeeds as usual when it then does it', async () => {
    const run = await h.client.run(
      { agent: 'test_agent', input: INPUT, model: 'tasks-reminded' },
      { timeoutMs: 30_000 },
    );
    expect(run).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
    expect(run.answer).toContain('reminded/shanghai.md');
    expect(run.steps.map((s) => [s.tool, s.ok])).toEqual([
      ['query_weather', true],
      ['write_markdown_file', true],
    ]);
    expect(run.tasks).toEqual(PLAN.map((t) => ({ ...t, done: true })));
    // The reminder is a model turn like any other: four turns, counted in the run's iterations.
    expect(run.iterations).toBe(4);

    const turns = turnsOf('tasks-reminded');
    expect(turns).toHaveLength(4);
    const reminder = lastMessage(turns[2]!);
    expect(reminder.role).toBe('system');
    expect(reminder.content).toContain('"write the plan to a file" (tool: write_markdown_file)');
    expect(reminder.content).not.toContain('"weather in 上海"');

    const open = (await eventsOf(run.run_id)).filter((e) => e.type === 'tasks_open');
    expect(open).toEqual([
      expect.objectContaining({
        type: 'tasks_open',
        turn: 2,
        action: 'remind',
        reminders_left: 0,
        open: [{ title: 'write the plan to a file', tool: 'write_markdown_file', done: false }],
      }),
    ]);
  });

  it('ends the run with its answer as succeeded/tasks_incomplete, naming the open step, when the model answers without it again', async () => {
    const run = await h.client.run(
      { agent: 'test_agent', input: INPUT, model: 'tasks-never' },
      { timeoutMs: 30_000 },
    );
    expect(run).toMatchObject({
      status: 'succeeded',
      reason: 'tasks_incomplete',
      answer: 'It is sunny in 上海.',
    });
    expect(run.report).toBe(
      'the model answered with 1 step of its task stack still open, after being sent back once: ' +
        'write the plan to a file (tool: write_markdown_file)',
    );
    expect(run.tasks).toEqual([
      { ...PLAN[0], done: true },
      { ...PLAN[1], done: false },
      { ...PLAN[2], done: true },
    ]);
    // Sent back once only: the weather turn, the answer, the reminded answer.
    expect(turnsOf('tasks-never')).toHaveLength(3);

    const events = await eventsOf(run.run_id);
    expect(
      events.filter((e) => e.type === 'tasks_open').map((e) => e.type === 'tasks_open' && e.action),
    ).toEqual(['remind', 'accept']);
    const finished = events.find((e) => e.type === 'run_finished');
    expect(finished?.type === 'run_finished' && finished.outcome).toMatchObject({
      status: 'succeeded',
      reason: 'tasks_incomplete',
    });
    // The timeline `agent-reach runs show` prints says both.
    const timeline = renderTimeline(await h.control.events(run.run_id));
    expect(timeline).toContain(
      'answer with 1 task-stack step(s) open, sent back (0 reminder(s) left): write the plan to a file',
    );
    expect(timeline).toContain('answer with 1 task-stack step(s) open, accepted: write the plan to a file');
    // The run's record says the same.
    const listed = await h.call('GET', '/v1/runs?agent=test_agent&limit=100');
    const runs = (listed.json as { runs: Array<{ run_id: string; reason?: string }> }).runs;
    expect(runs.find((r) => r.run_id === run.run_id)?.reason).toBe('tasks_incomplete');
  });

  it('sends no reminder when the run allows none (loop.task_reminders 0) and marks the first such answer incomplete', async () => {
    const asked = turnsOf('tasks-reminded').length;
    const run = await h.client.run(
      {
        agent: 'test_agent',
        input: `${INPUT} (no reminders)`,
        model: 'tasks-reminded',
        variant: { name: 'no-reminders', overrides: { loop: { task_reminders: 0 } } },
      },
      { timeoutMs: 30_000 },
    );
    expect(run).toMatchObject({ status: 'succeeded', reason: 'tasks_incomplete', iterations: 2 });
    expect(run.report).toBe(
      'the model answered with 1 step of its task stack still open: write the plan to a file (tool: write_markdown_file)',
    );
    expect(turnsOf('tasks-reminded').length - asked).toBe(2);
    const open = (await eventsOf(run.run_id)).filter((e) => e.type === 'tasks_open');
    expect(open).toEqual([expect.objectContaining({ action: 'accept', reminders_left: 0 })]);
  });

  it('refuses a loop.task_reminders outside 0 to 5, naming the field', async () => {
    const res = await h.call('POST', '/v1/runs', {
      body: {
        agent: 'test_agent',
        input: INPUT,
        variant: { name: 'too-many', overrides: { loop: { task_reminders: 9 } } },
      },
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('task_reminders');
  });

  it("holds a session's next run to its own steps only: one left open by the run before is shown, not reminded", async () => {
    const { session_id } = await h.client.createSession();
    const first = await h.client.sendMessage(session_id, {
      agent: 'test_agent',
      input: `${INPUT} (session)`,
      model: 'tasks-never',
    });
    expect(await h.client.waitForRun(first.run_id, { timeoutMs: 30_000 })).toMatchObject({
      reason: 'tasks_incomplete',
    });
    const next = await h.client.sendMessage(session_id, {
      input: 'thanks, that is all',
      model: 'tasks-never',
    });
    const run = await h.client.waitForRun(next.run_id, { timeoutMs: 30_000 });
    expect(run).toMatchObject({ status: 'succeeded', reason: 'final_answer', iterations: 1 });
    expect(run.tasks).toEqual([{ ...PLAN[1], done: false, carried: true }]);
    expect((await eventsOf(run.run_id)).some((e) => e.type === 'tasks_open')).toBe(false);
  });

  it('never sends back a model that did every step', async () => {
    const run = await h.client.run(
      { agent: 'test_agent', input: INPUT, model: 'tasks-all-done' },
      { timeoutMs: 30_000 },
    );
    expect(run).toMatchObject({ status: 'succeeded', reason: 'final_answer', iterations: 3 });
    expect((await eventsOf(run.run_id)).some((e) => e.type === 'tasks_open')).toBe(false);
  });
});
