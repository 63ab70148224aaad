import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiHarness, type ApiHarness } from './helpers/api.js';

describe('the published OpenAPI document', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is a valid OpenAPI document by @apidevtools/swagger-parser, fetched from a running API', async () => {
    const res = await fetch(`${h.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/v1/runs');
    // validate dereferences in place: hand it a copy so the version check reads the document as served.
    let problem: unknown;
    try {
      await SwaggerParser.validate(structuredClone(doc) as never);
    } catch (err) {
      problem = err instanceof Error ? err.message : err;
    }
    expect({ openapi: doc.openapi, problem }).toEqual({ openapi: doc.openapi, problem: undefined });
    // 3.0-only spellings that a 3.1 document must not carry (3.1 schemas are JSON Schema 2020-12).
    const text = JSON.stringify(doc);
    expect(text).not.toMatch(/"nullable":|"exclusive(Minimum|Maximum)":(true|false)/);
  });
});
