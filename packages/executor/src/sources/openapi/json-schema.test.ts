import { describe, expect, it } from 'vitest';
import { createAjv } from '@agent-reach/shared';
import { retryAfter } from './http-call.js';
import { toJsonSchema } from './json-schema.js';

const formats = new Set(Object.keys((createAjv() as unknown as { formats: object }).formats));
const v30 = (schema: unknown) => toJsonSchema(schema, { version: '3.0', formats, direction: 'request' });
const v31 = (schema: unknown) => toJsonSchema(schema, { version: '3.1', formats, direction: 'request' });
/** The converted schema as the tool registry compiles it (strict ajv). */
const compiles = (schema: object) => createAjv().compile({ type: 'object', properties: { x: schema } });

describe('toJsonSchema (OpenAPI schema to the strict JSON Schema of a tool argument)', () => {
  it("rewrites 3.0's nullable and boolean exclusive bounds, and example as examples", () => {
    const out = v30({
      type: 'object',
      properties: {
        note: { type: 'string', nullable: true, example: 'paid' },
        kind: { type: 'string', enum: ['a', 'b'], nullable: true },
        amount: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: false },
      },
    });
    expect(out).toEqual({
      type: 'object',
      properties: {
        note: { type: ['string', 'null'], examples: ['paid'] },
        kind: { type: ['string', 'null'], enum: ['a', 'b', null] },
        amount: { type: 'number', exclusiveMinimum: 0, maximum: 10 },
      },
    });
    const validate = compiles(out);
    expect(validate({ x: { note: null, kind: null, amount: 10 } })).toBe(true);
    expect(validate({ x: { amount: 0 } })).toBe(false);
  });

  it('leaves out what the server sets (readOnly) from request schemas, and from their required list', () => {
    const out = v30({
      type: 'object',
      required: ['id', 'name'],
      properties: { id: { type: 'string', readOnly: true }, name: { type: 'string' } },
    });
    expect(out).toEqual({ type: 'object', required: ['name'], properties: { name: { type: 'string' } } });
  });

  it('drops extensions, OpenAPI-only keywords, unknown formats and non-ECMAScript patterns, and adds implied types', () => {
    const out = v31({
      'x-internal': true,
      discriminator: { propertyName: 'kind' },
      xml: { name: 'thing' },
      required: ['code'],
      properties: {
        code: { pattern: '(?<!x)[A-Z]{3}', format: 'currency-code' },
        when: { type: 'string', format: 'date-time' },
        bad: { type: 'string', pattern: '[[:alpha:]]+(?i)' },
      },
    });
    expect(out).toEqual({
      type: 'object',
      required: ['code'],
      properties: {
        code: { type: 'string', pattern: '(?<!x)[A-Z]{3}' },
        when: { type: 'string', format: 'date-time' },
        bad: { type: 'string' },
      },
    });
    expect(() => compiles(out)).not.toThrow();
  });

  it('gives a required name without a property one that accepts anything, so strict mode compiles it', () => {
    const out = v31({
      allOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { required: ['a'] }],
    });
    expect(out.allOf).toEqual([
      { type: 'object', properties: { a: { type: 'string' } } },
      { type: 'object', required: ['a'], properties: { a: {} } },
    ]);
    expect(compiles(out)({ x: {} })).toBe(false);
  });

  it('accepts any value where a schema contains itself (a circular $ref left in place)', () => {
    const node: Record<string, unknown> = { type: 'object', properties: { name: { type: 'string' } } };
    (node.properties as Record<string, unknown>).children = { type: 'array', items: node };
    const out = v31(node);
    expect(out).toEqual({
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: {} } },
    });
    expect(v31({ $ref: '#/components/schemas/Node', description: 'a node' })).toEqual({
      description: 'a node',
    });
  });
});

describe('retryAfter', () => {
  it('reads seconds and HTTP dates, and makes a wait longer than the cap infinite', () => {
    expect(retryAfter(null)).toBeUndefined();
    expect(retryAfter('2')).toBe(2000);
    expect(retryAfter('soon')).toBeUndefined();
    expect(retryAfter(new Date(Date.now() - 60_000).toUTCString())).toBe(0);
    expect(retryAfter('3600')).toBe(Number.POSITIVE_INFINITY);
  });
});
