import fc from 'fast-check';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { TOOL_CALL_ID_PATTERN } from '@agent-reach/protocol';
import { argumentsDigest, constants } from '@agent-reach/shared';
import type { AgentSpec } from '@agent-reach/shared';
import { answerText, readModelTurn, readUsage, uniqueIds } from './model-answer.js';
import { buildMessages } from './prompt.js';
import { createRunState, type RunState } from './run-state.js';

const fresh = (): RunState => createRunState({ runId: 'run_m', agent: 'a', input: 'hi', deadlineMs: 60_000 });

/** A provider's answer as it came over the wire, however malformed. */
function answer(message: unknown, finishReason: unknown = 'tool_calls', extra: object = {}): ChatCompletion {
  return {
    choices: [{ index: 0, message, finish_reason: finishReason }],
    ...extra,
  } as unknown as ChatCompletion;
}

const call = (name: string, args: unknown = '{}', more: object = {}) => ({
  id: `id_${name}`,
  type: 'function',
  function: { name, arguments: args },
  ...more,
});

describe('readModelTurn', () => {
  it('reads the reasoning text of reasoning_content or reasoning, capped, and none when it is blank or not text', () => {
    const read = (message: object) =>
      readModelTurn(answer({ content: 'ok', ...message }, 'stop'), fresh(), 1);
    expect(read({ reasoning_content: 'first the weather' }).reasoning).toBe('first the weather');
    expect(read({ reasoning: 'from another provider' }).reasoning).toBe('from another provider');
    expect(read({ reasoning_content: '  ' })).not.toHaveProperty('reasoning');
    expect(read({ reasoning_content: { text: 'x' } })).not.toHaveProperty('reasoning');
    const long = read({ reasoning_content: 'x'.repeat(constants.MAX_MODEL_TEXT_CHARS + 10) });
    expect(long.reasoning).toHaveLength(constants.MAX_MODEL_TEXT_CHARS);
  });

  it('reads text, finish reason and well-formed calls as they were sent', () => {
    const turn = readModelTurn(
      answer({ content: 'looking', tool_calls: [call('weather', '{"city":"Paris"}')] }),
      fresh(),
      1,
    );
    expect(turn).toEqual({
      content: 'looking',
      finishReason: 'tool_calls',
      calls: [{ id: 'id_weather', name: 'weather', arguments: '{"city":"Paris"}' }],
      droppedCalls: 0,
      textCut: false,
    });
  });

  it('never throws on answers with no choices, no message or junk in their place', () => {
    for (const res of [
      {},
      { choices: [] },
      { choices: ['x'] },
      answer(null),
      answer({ tool_calls: 'x' }, 42),
    ]) {
      expect(readModelTurn(res as ChatCompletion, fresh(), 1)).toMatchObject({
        content: null,
        calls: [],
        droppedCalls: 0,
      });
    }
    expect(readModelTurn({} as ChatCompletion, fresh(), 1).finishReason).toBe('unknown');
  });

  it('runs a call without a type as a function call and refuses one of another type', () => {
    const { calls } = readModelTurn(
      answer({
        tool_calls: [
          { id: 'a', function: { name: 'echo', arguments: '{}' } },
          call('echo', '{}', { id: 'b', type: 'custom' }),
        ],
      }),
      fresh(),
      1,
    );
    expect(calls[0]).toEqual({ id: 'a', name: 'echo', arguments: '{}' });
    expect(calls[1]?.refused).toEqual({
      kind: 'unknown_tool',
      message: 'tool calls of type "custom" are not supported: call one of the function tools offered',
      retryable: false,
    });
  });

  it('records a name outside the tool-name pattern as the model wrote it and suggests the closest reachable tool', () => {
    const { calls } = readModelTurn(answer({ tool_calls: [call('functions.query_weather')] }), fresh(), 1, [
      'query_weather',
      'write_file',
    ]);
    expect(calls[0]).toMatchObject({
      name: 'functions.query_weather',
      refused: {
        kind: 'unknown_tool',
        message:
          '"functions.query_weather" is not a tool name (letters, digits, "_" and "-", 1 to 64 characters); ' +
          'did you mean "query_weather"?',
        did_you_mean: 'query_weather',
        available_tools: ['query_weather', 'write_file'],
      },
    });
  });

  it('sends a recorded name outside the pattern back to the provider in a safe spelling, keeping the record as written', () => {
    const state = fresh();
    const history = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        { id: 'a', type: 'function' as const, function: { name: 'query＿weather', arguments: '{}' } },
        { id: 'b', type: 'function' as const, function: { name: 'look_up', arguments: '{}' } },
      ],
    };
    state.messages.push(history);
    const sent = buildMessages({ name: 'a', tools: [] } as unknown as AgentSpec, state, []);
    expect(sent.at(-1)).toMatchObject({
      tool_calls: [{ function: { name: 'query_weather' } }, { function: { name: 'look_up' } }],
    });
    expect(history.tool_calls.map((c) => c.function.name)).toEqual(['query＿weather', 'look_up']);
  });

  it('refuses arguments over the limit, keeping a prefix, their length and digest', () => {
    const big = JSON.stringify({ text: 'x'.repeat(constants.MAX_TOOL_ARGUMENTS_CHARS) });
    const [c] = readModelTurn(answer({ tool_calls: [call('write', big)] }), fresh(), 1).calls;
    expect(c?.arguments).toBe(big.slice(0, constants.TOOL_ARGUMENTS_PREFIX_CHARS));
    expect(c?.original).toEqual({ chars: big.length, sha256: argumentsDigest(big) });
    expect(c?.refused).toMatchObject({
      kind: 'invalid_arguments',
      constraint: 'max_length',
      retryable: false,
    });
  });

  it('accepts arguments of exactly the limit', () => {
    const exact = 'x'.repeat(constants.MAX_TOOL_ARGUMENTS_CHARS);
    expect(
      readModelTurn(answer({ tool_calls: [call('write', exact)] }), fresh(), 1).calls[0]?.refused,
    ).toBeUndefined();
  });

  it('refuses arguments cut off at the output token limit, but not complete ones of the same answer', () => {
    const { calls } = readModelTurn(
      answer({ tool_calls: [call('a', '{"city":"Par'), call('b', '{"city":"Paris"}')] }, 'length'),
      fresh(),
      1,
    );
    expect(calls[0]?.refused).toMatchObject({ kind: 'invalid_arguments', constraint: 'truncated' });
    expect(calls[1]?.refused).toBeUndefined();
  });

  it('serializes arguments sent as an object and reads missing ones as {}', () => {
    const { calls } = readModelTurn(
      answer({ tool_calls: [call('a', { city: 'Paris' }), call('b', null)] }),
      fresh(),
      1,
    );
    expect(calls.map((c) => c.arguments)).toEqual(['{"city":"Paris"}', '{}']);
  });

  it('takes at most the per-turn number of calls and counts the rest as dropped', () => {
    const many = Array.from({ length: constants.MAX_TOOL_CALLS_PER_TURN + 3 }, (_, i) => call(`t${i}`));
    const turn = readModelTurn(answer({ tool_calls: many }), fresh(), 1);
    expect(turn.calls).toHaveLength(constants.MAX_TOOL_CALLS_PER_TURN);
    expect(turn.droppedCalls).toBe(3);
  });

  it('cuts text and refusals over the limit and says so', () => {
    const long = 'y'.repeat(constants.MAX_MODEL_TEXT_CHARS + 1);
    const turn = readModelTurn(answer({ content: long, refusal: 'no' }, 'stop'), fresh(), 1);
    expect(turn.content).toHaveLength(constants.MAX_MODEL_TEXT_CHARS);
    expect(turn).toMatchObject({ refusal: 'no', textCut: true });
    expect(readModelTurn(answer({ content: 'ok', refusal: '  ' }, 'stop'), fresh(), 1)).not.toHaveProperty(
      'refusal',
    );
  });
});

describe('uniqueIds', () => {
  it('keeps the first use of an id and rewrites reused, empty, missing, invalid and prototype ids', () => {
    const s = fresh();
    s.messages.push({ role: 'tool', tool_call_id: 'used_before', content: '{}' });
    const ids = uniqueIds(s, 2, [
      { id: 'dup' },
      { id: 'dup' },
      { id: '' },
      { id: undefined },
      { id: 'has space' },
      { id: '__proto__' },
      { id: 'used_before' },
      { id: 'call_t2_0' },
    ]).map((c) => c.id);
    expect(ids).toEqual([
      'dup',
      'call_t2_1',
      'call_t2_2',
      'call_t2_3',
      'call_t2_4',
      'call_t2_5',
      'call_t2_6',
      'call_t2_0',
    ]);
  });

  it('adds a suffix when even the rewritten id is taken', () => {
    const s = fresh();
    s.messages.push({ role: 'tool', tool_call_id: 'call_t1_0', content: '{}' });
    expect(uniqueIds(s, 1, [{ id: null }]).map((c) => c.id)).toEqual(['call_t1_0_1']);
  });

  it('gives every call a unique, pattern-valid id, whatever the provider sent (property)', () => {
    const rawId = fc.oneof(
      fc.constantFrom('dup', '', '__proto__', 'call_t1_0', null),
      fc.string({ maxLength: 70 }),
    );
    fc.assert(
      fc.property(
        fc.array(rawId, { maxLength: 40 }),
        fc.array(fc.constantFrom('dup', 'call_t1_0', 'x')),
        (raw, history) => {
          const s = fresh();
          for (const id of history) s.messages.push({ role: 'tool', tool_call_id: id, content: '{}' });
          const ids = uniqueIds(
            s,
            1,
            raw.map((id) => ({ id })),
          ).map((c) => c.id);
          expect(new Set([...ids, ...history]).size).toBe(ids.length + new Set(history).size);
          for (const id of ids) expect(id).toMatch(TOOL_CALL_ID_PATTERN);
        },
      ),
    );
  });
});

describe('readUsage', () => {
  it('reads sane numbers, rounds them and sums a missing total', () => {
    expect(readUsage({ usage: { prompt_tokens: 10.4, completion_tokens: 5 } })).toEqual({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
    });
  });

  it('reads negative, infinite and non-numeric counts as zero, and no usage as none', () => {
    expect(
      readUsage({ usage: { prompt_tokens: -1, completion_tokens: Infinity, total_tokens: 'many' } }),
    ).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
    });
    expect(readUsage({})).toBeUndefined();
    expect(readUsage({ usage: 'lots' })).toBeUndefined();
  });
});

describe('answerText', () => {
  it('returns the text of the first choice, or undefined when there is none', () => {
    expect(answerText(answer({ content: '{"steps":[]}' }, 'stop'))).toBe('{"steps":[]}');
    expect(answerText(answer({ content: null }, 'stop'))).toBeUndefined();
    expect(answerText({} as ChatCompletion)).toBeUndefined();
  });
});
