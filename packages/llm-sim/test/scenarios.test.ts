import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RateLimitError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterEach, describe, expect, it } from 'vitest';
import {
  loadScenarios,
  ScenarioValidationError,
  startLlmSim,
  type LlmSim,
  type Scenario,
} from '../src/index.js';
import { client, functionCalls, postRaw, withToolResults } from './helpers.js';

const shippedDir = fileURLToPath(new URL('../scenarios', import.meta.url));
const dirs: string[] = [];
const sims: LlmSim[] = [];

function tempDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'llm-sim-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function started(...args: Parameters<typeof startLlmSim>): Promise<LlmSim> {
  const sim = await startLlmSim(...args);
  sims.push(sim);
  return sim;
}

afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function loadError(dir: string): ScenarioValidationError {
  try {
    loadScenarios(dir);
  } catch (err) {
    if (err instanceof ScenarioValidationError) return err;
    throw err;
  }
  throw new Error('loadScenarios accepted an invalid scenario');
}

describe('loadScenarios', () => {
  it('loads YAML and JSON files in name order and ignores other files', () => {
    const dir = tempDir({
      'b.yaml': 'name: b\nturns:\n  - content: hi\n',
      'a.json': JSON.stringify({ name: 'a', turns: [{ tool_calls: [{ name: 'x', arguments: { n: 1 } }] }] }),
      'c.yml': 'name: c\nturns: []\n',
      'notes.txt': 'not a scenario',
    });
    const loaded = loadScenarios(dir);
    expect(loaded.map((s) => s.name)).toEqual(['a', 'b', 'c']);
    expect(loaded[0]!.turns[0]!.tool_calls![0]!.arguments).toEqual({ n: 1 });
  });

  it('rejects a bad file with every problem, naming the file and each field', () => {
    const dir = tempDir({
      'bad.yaml': [
        'name: bad',
        'turns:',
        '  - tool_calls:',
        '      - arguments: { a: 1 }',
        '    fault: { type: explode }',
        '  - tool_call: []',
        '    content: 3',
        '  - content: x',
        '    repeat: yes',
        '    fault: [{ type: latency }]',
      ].join('\n'),
    });
    const err = loadError(dir);
    expect(err.source).toBe(join(dir, 'bad.yaml'));
    expect(err.message).toContain(join(dir, 'bad.yaml'));
    expect(err.problems).toEqual([
      { path: 'turns[0].tool_calls[0].name', message: 'must be a non-empty string' },
      {
        path: 'turns[0].fault.type',
        message: expect.stringContaining('must be one of rate_limit, server_error'),
      },
      { path: 'turns[1].tool_call', message: expect.stringContaining('unknown field') },
      { path: 'turns[1].content', message: 'must be a string' },
      { path: 'turns[2].fault[0].ms', message: 'is required' },
      // YAML 1.2: `yes` is a string, not a boolean.
      { path: 'turns[2].repeat', message: 'must be a boolean' },
    ]);
    expect(err.message).toContain('turns[0].tool_calls[0].name: must be a non-empty string');
  });

  it('rejects repeat on a turn that is not the last one', () => {
    const err = loadError(
      tempDir({ 'r.yaml': 'name: r\nturns:\n  - content: a\n    repeat: true\n  - content: b\n' }),
    );
    expect(err.problems).toEqual([{ path: 'turns[0].repeat', message: 'is only allowed on the last turn' }]);
  });

  it('names the file when its YAML does not parse', () => {
    const err = loadError(tempDir({ 'broken.yaml': 'name: [unclosed\n' }));
    expect(err.message).toContain(`invalid scenario ${tempDirs()}/broken.yaml`);
    expect(err.message).toContain('is not valid YAML');
  });

  it('rejects two files that use the same scenario name', () => {
    const err = loadError(
      tempDir({ 'one.yaml': 'name: same\nturns: []\n', 'two.yaml': 'name: same\nturns: []\n' }),
    );
    expect(err.source).toMatch(/two\.yaml$/);
    expect(err.message).toContain("name: 'same' is already used by");
  });

  it('rejects an invalid scenario given to startLlmSim or addScenario', async () => {
    const bad = { name: 'bad', turns: [{}] } as unknown as Scenario;
    await expect(startLlmSim({ scenarios: [bad] })).rejects.toThrow('options.scenarios[0]');
    const sim = await started({ scenarios: [] });
    expect(() => sim.addScenario(bad)).toThrow(/turns\[0\]: needs content, tool_calls or refusal/);
  });
});

describe('shipped scenarios', () => {
  it('all load, including weather-trip, echo and parallel-weather', () => {
    const names = loadScenarios(shippedDir).map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining(['weather-trip', 'echo', 'parallel-weather', 'self-healing']),
    );
  });

  it('weather-trip queries the weather, writes the plan with the weather in it, then names the file', async () => {
    const sim = await started({ scenariosDir: shippedDir });
    const openai = client(sim);
    let messages: ChatCompletionMessageParam[] = [
      { role: 'user', content: '查一下上海天气，然后写一份周末两日游建议存成 md 文件' },
    ];
    const plan = await openai.chat.completions.create({
      model: 'weather-trip',
      messages,
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(plan.choices[0]!.message.content!).steps).toHaveLength(2);
    const first = await openai.chat.completions.create({ model: 'weather-trip', messages });
    expect(functionCalls(first).map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['query_weather', { city: '上海' }],
    ]);
    messages = withToolResults(messages, first, () => ({ ok: true, content: { summary: '晴，18~25°C' } }));
    const second = await openai.chat.completions.create({ model: 'weather-trip', messages });
    const [write] = functionCalls(second);
    const args = JSON.parse(write!.arguments) as { path: string; content: string };
    expect(write!.name).toBe('write_markdown_file');
    expect(args.path).toBe('shanghai-weekend-trip.md');
    expect(args.content).toContain('晴，18~25°C');
    expect(args.content).toContain('第二天');
    messages = withToolResults(messages, second, () => ({
      ok: true,
      content: { path: '/data/shanghai-weekend-trip.md' },
    }));
    const last = await openai.chat.completions.create({ model: 'weather-trip', messages });
    expect(last.choices[0]!.message.content).toContain('/data/shanghai-weekend-trip.md');
    expect(sim.requests.flatMap((r) => r.warnings ?? [])).toEqual([]);
  });

  it('weather-trip still writes a plan when the weather result has an unexpected shape', async () => {
    const sim = await started({ scenariosDir: shippedDir });
    const openai = client(sim);
    let messages: ChatCompletionMessageParam[] = [{ role: 'user', content: '上海周末' }];
    const first = await openai.chat.completions.create({ model: 'weather-trip', messages });
    messages = withToolResults(messages, first, () => '小雨转多云');
    const second = await openai.chat.completions.create({ model: 'weather-trip', messages });
    const args = JSON.parse(functionCalls(second)[0]!.arguments) as { content: string };
    expect(args.content).toContain('## 天气\n小雨转多云\n');
  });

  it('echo repeats the latest user message and parallel-weather makes two calls in one turn', async () => {
    const sim = await started({ scenariosDir: shippedDir });
    const openai = client(sim);
    const echo = await openai.chat.completions.create({
      model: 'echo',
      messages: [{ role: 'user', content: '你好' }],
    });
    expect(echo.choices[0]!.message.content).toBe('You said: 你好');
    const both = await openai.chat.completions.create({
      model: 'parallel-weather',
      messages: [{ role: 'user', content: 'compare' }],
    });
    const calls = functionCalls(both);
    expect(calls.map((c) => JSON.parse(c.arguments))).toEqual([{ city: '北京' }, { city: '上海' }]);
    expect(calls[0]!.id).not.toBe(calls[1]!.id);
  });
  it('self-healing recovers from a hallucinated tool name and a wrongly typed argument', async () => {
    const sim = await started({ scenariosDir: shippedDir });
    const openai = client(sim);
    let messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather, then my order' }];
    const wrongName = await openai.chat.completions.create({ model: 'self-healing', messages });
    expect(functionCalls(wrongName)[0]!.name).toBe('get_wether');
    messages = withToolResults(messages, wrongName, () => ({
      ok: false,
      error: { code: 'TOOL_NOT_FOUND', did_you_mean: 'query_weather' },
    }));
    const limited = await openai.chat.completions
      .create({ model: 'self-healing', messages })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    const fixedName = await openai.chat.completions.create({ model: 'self-healing', messages });
    expect(functionCalls(fixedName)[0]!.name).toBe('query_weather');
    messages = withToolResults(messages, fixedName, () => ({ ok: true, content: { summary: 'sunny' } }));
    const wrongType = await openai.chat.completions.create({ model: 'self-healing', messages });
    expect(JSON.parse(functionCalls(wrongType)[0]!.arguments)).toEqual({ order_id: 12345 });
    messages = withToolResults(messages, wrongType, () => ({
      ok: false,
      error: { code: 'TOOL_ARGS_INVALID' },
    }));
    const fixedType = await openai.chat.completions.create({ model: 'self-healing', messages });
    expect(JSON.parse(functionCalls(fixedType)[0]!.arguments)).toEqual({ order_id: 'ORD-123456' });
  });
});

describe('recording', () => {
  it('appends every request to the JSONL file exactly as kept in memory', async () => {
    const file = join(tempDir({}), 'requests.jsonl');
    const sim = await started({ scenarios: [{ name: 'rec', turns: [{ content: 'ok' }] }], recordFile: file });
    await postRaw(
      sim,
      { model: 'rec', messages: [{ role: 'user', content: 'one' }] },
      { authorization: 'Bearer s3cret' },
    );
    await postRaw(sim, { model: 'rec', messages: [] });
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(JSON.parse(JSON.stringify(sim.requests)));
    expect(sim.requests.map((r) => r.status)).toEqual([200, 400]);
    expect(readFileSync(file, 'utf8')).not.toContain('s3cret');
    const held = sim.requests;
    sim.clearRequests();
    expect(held).toHaveLength(0);
  });
});

function tempDirs(): string {
  return dirs[dirs.length - 1]!;
}
