import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import {
  answerJson,
  checkOutput,
  fitsStrictMode,
  outputPathProblem,
  outputSchemaProblems,
  responseFormatFor,
} from './output-schema.js';

const CITY = {
  type: 'object',
  additionalProperties: false,
  required: ['city', 'days'],
  properties: {
    city: { type: 'string' },
    days: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['temp'],
        properties: { temp: { type: 'number' } },
      },
    },
  },
};

describe('output schemas', () => {
  it('names what makes a schema unusable: not an object, an unknown keyword, a malformed keyword', () => {
    expect(outputSchemaProblems('object')).toEqual(['must be a JSON Schema object']);
    expect(outputSchemaProblems({ type: 'object', propertys: {} })).toEqual([
      'is not a usable JSON Schema: strict mode: unknown keyword: "propertys"',
    ]);
    expect(outputSchemaProblems({ type: 'strng' })[0]).toMatch(
      /^is not a usable JSON Schema: schema is invalid: data\/type/,
    );
    expect(outputSchemaProblems(CITY)).toEqual([]);
    // A field may be required without being described.
    expect(outputSchemaProblems({ type: 'object', required: ['ok'] })).toEqual([]);
  });

  it('refuses an agents file whose agent declares an unusable output schema, naming the agent', () => {
    const text = [
      'agents:',
      '  - name: reporter',
      '    tools: []',
      '    output_schema: { type: object, minimum: one }',
    ].join('\n');
    let err: AgentReachError | undefined;
    try {
      parseAgents(text, 'a.yaml');
    } catch (e) {
      err = e as AgentReachError;
    }
    expect(err?.code).toBe('AGENTS_INVALID');
    expect(err?.details).toEqual([
      'a.yaml: agent "reporter": output_schema is not a usable JSON Schema: schema is invalid: data/minimum must be number',
    ]);
  });

  it('asks strict only for schemas inside strict mode: closed objects, every property required, known keywords', () => {
    expect(responseFormatFor(CITY, 'city')).toEqual({
      type: 'json_schema',
      json_schema: { name: 'city', schema: CITY, strict: true },
    });
    expect(fitsStrictMode({ ...CITY, required: ['city'] })).toBe(false);
    expect(fitsStrictMode({ ...CITY, additionalProperties: true })).toBe(false);
    expect(fitsStrictMode({ type: 'object', properties: { a: { type: 'string', minLength: 1 } } })).toBe(
      false,
    );
    expect(fitsStrictMode({ type: 'array', items: { type: 'string' } })).toBe(false);
  });

  it('reads the JSON of an answer bare or in a fenced json block', () => {
    expect(answerJson(' {"a": 1} ')).toBe('{"a": 1}');
    expect(answerJson('```json\n{"a": 1}\n```')).toBe('{"a": 1}');
    expect(answerJson('```\n[1]\n```')).toBe('[1]');
  });

  it('reports each problem of an answer with its field, constraint and what was expected', () => {
    expect(checkOutput('```json\n{"city": "Oslo", "days": [{"temp": 3}]}\n```', CITY)).toEqual({
      ok: true,
      output: { city: 'Oslo', days: [{ temp: 3 }] },
      json: '{"city": "Oslo", "days": [{"temp": 3}]}',
    });
    const bad = checkOutput('{"city": 1, "days": [{"temp": "warm"}], "extra": true}', CITY);
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.problems.map((p) => [p.field, p.constraint, p.expected])).toEqual([
      ['/extra', 'additionalProperties', 'only the known fields: city, days'],
      ['/city', 'type', 'string'],
      ['/days/0/temp', 'type', 'number'],
    ]);
    const notJson = checkOutput('It is cold.', CITY);
    expect(!notJson.ok && notJson.problems[0]).toMatchObject({ field: '/', constraint: 'json' });
  });

  it("says why a field path cannot be in a schema's value, and accepts the paths it can have", () => {
    expect(outputPathProblem(CITY, ['city'])).toBeUndefined();
    expect(outputPathProblem(CITY, ['days', '0', 'temp'])).toBeUndefined();
    expect(outputPathProblem(CITY, ['town'])).toBe('the output has no field "town" (its fields: city, days)');
    expect(outputPathProblem(CITY, ['days', 'first'])).toBe('days is an array: "first" is not an index');
    expect(outputPathProblem(CITY, ['city', 'name'])).toBe('city is a string: it has no field "name"');
    expect(outputPathProblem({ type: 'object' }, ['anything', 'below'])).toBeUndefined();
  });
});
