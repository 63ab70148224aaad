import { Type } from '@sinclair/typebox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkArguments, exampleFor } from './arguments.js';
import { createAjv } from './registry.js';

const PARAMETERS = Type.Object(
  {
    city: Type.String({ examples: ['Shanghai'] }),
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 })),
    unit: Type.Optional(Type.Union([Type.Literal('c'), Type.Literal('f')])),
    when: Type.Optional(Type.String({ format: 'date' })),
    stops: Type.Optional(Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
);
const validate = createAjv().compile(PARAMETERS);
const check = (raw: string) => checkArguments('weather', raw, validate, PARAMETERS);

describe('checkArguments', () => {
  it('accepts arguments matching the schema and returns them parsed', () => {
    expect(check('{"city":"Paris","days":3}')).toEqual({ ok: true, args: { city: 'Paris', days: 3 } });
  });

  it('reads empty arguments as an empty object, which the schema then judges', () => {
    expect(check('  ')).toEqual({
      ok: false,
      error: {
        kind: 'invalid_arguments',
        message: "invalid arguments for weather: field /city must have required property 'city'",
        field: '/city',
        constraint: 'required',
        expected: 'a value for the required field "city"',
        example: 'Shanghai',
        retryable: false,
      },
    });
  });

  it('tells the model where the JSON broke and shows a whole valid example', () => {
    const result = check('{"city": "Paris",');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({
      kind: 'invalid_arguments',
      constraint: 'json',
      expected: 'a JSON object matching the tool schema',
      example: { city: 'Shanghai' },
      retryable: false,
    });
    expect(result.error.message).toMatch(/^arguments of weather are not valid JSON: /);
  });

  it.each([
    ['{"__proto__":{"admin":true},"city":"x"}'],
    ['{"constructor":{"prototype":{"admin":true}},"city":"x"}'],
  ])('refuses a forbidden key instead of merging it: %s', (raw) => {
    const result = check(raw);
    expect(result).toMatchObject({
      ok: false,
      error: {
        constraint: 'forbidden_key',
        message: 'arguments of weather contain a forbidden key (__proto__ or constructor.prototype)',
      },
    });
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it.each(['[]', '"Paris"', '42', 'null'])('requires a JSON object, not %s', (raw) => {
    expect(check(raw)).toMatchObject({
      ok: false,
      error: {
        message: 'arguments of weather must be a JSON object',
        constraint: 'type',
        expected: 'object',
      },
    });
  });

  it.each([
    ['{"city":7}', '/city', 'type', 'string', 'Shanghai'],
    ['{"city":"x","days":0}', '/days', 'minimum', 'must be >= 1', 1],
    ['{"city":"x","when":"tomorrow"}', '/when', 'format', 'a string in date format', '2026-01-31'],
    [
      '{"city":"x","country":"FR"}',
      '/country',
      'additionalProperties',
      'only the known fields: city, days, unit, when, stops',
      { city: 'Shanghai' },
    ],
    [
      '{"city":"x","stops":[{}]}',
      '/stops/0/name',
      'required',
      'a value for the required field "name"',
      'text',
    ],
  ])('names the field, the rule and an example for %s', (raw, field, constraint, expected, example) => {
    const result = check(raw);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({ field, constraint, expected, retryable: false });
    expect(result.error.example).toEqual(example);
  });

  it('answers any string without throwing, with a valid object or an invalid_arguments error (property)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (raw) => {
        const result = check(raw);
        if (result.ok) expect(validate(result.args)).toBe(true);
        else expect(result.error).toMatchObject({ kind: 'invalid_arguments', retryable: false });
      }),
    );
  });
});

describe('exampleFor', () => {
  it('prefers the schema’s own examples, default, enum and const, in that order', () => {
    expect(exampleFor({ type: 'string', examples: ['a'], default: 'b', enum: ['c'] })).toBe('a');
    expect(exampleFor({ type: 'string', default: 'b', enum: ['c'] })).toBe('b');
    expect(exampleFor({ type: 'string', enum: ['c'] })).toBe('c');
    expect(exampleFor({ const: 'd' })).toBe('d');
  });

  it('builds a value by type, starting numbers at their minimum', () => {
    expect(exampleFor({ type: 'integer', minimum: 5 })).toBe(5);
    expect(exampleFor({ type: 'number' })).toBe(1.5);
    expect(exampleFor({ type: 'boolean' })).toBe(true);
    expect(exampleFor({ type: 'string', format: 'email' })).toBe('name@example.com');
  });

  it('fills an object with its required fields only', () => {
    expect(
      exampleFor({
        type: 'object',
        required: ['a'],
        properties: { a: { type: 'string' }, b: { type: 'integer' } },
      }),
    ).toEqual({ a: 'text' });
  });

  it('has no example for what is not a schema', () => {
    expect(exampleFor(undefined)).toBeUndefined();
    expect(exampleFor({})).toBeUndefined();
  });
});
