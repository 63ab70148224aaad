import type { Redis } from 'ioredis';
import { constants, defineTool, noResult, Type, type Keys, type ToolDefinition } from '@agent-reach/shared';

const PAGE = constants.DEFAULT_GET_FULL_RESULT_PAGE_CHARS;

/** Pages through the full content of a truncated result by its `ref`. */
export function createGetFullResult(redis: Redis, keys: Keys): ToolDefinition {
  return defineTool({
    name: 'get_full_result',
    description:
      'Read the full content of a tool result that came back with truncated: true, by its ref, one page at a time. ' +
      'Returns the page text (a slice of the full JSON), and next_offset when more remains. Refs expire after an hour.',
    parameters: Type.Object(
      {
        ref: Type.String({
          pattern: '^ref_[0-9a-f-]{36}$',
          examples: ['ref_123e4567-e89b-12d3-a456-426614174000'],
        }),
        offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
        limit: Type.Optional(Type.Integer({ minimum: 100, maximum: PAGE, default: PAGE })),
      },
      { additionalProperties: false },
    ),
    timeoutMs: 2000,
    accessScope: 'platform',
    readOnly: true,
    // A page must reach the model whole: its budget allows for the JSON escaping of the page text.
    resultBudgetChars: PAGE * 3,
    handler: async ({ ref, offset = 0, limit = PAGE }) => {
      const full = await redis.get(keys.ref(ref));
      if (full === null) return noResult(`no stored result under ${ref}; it may have expired`);
      const page = full.slice(offset, offset + limit);
      const next = offset + page.length;
      return {
        ref,
        offset,
        total_chars: full.length,
        page,
        ...(next < full.length ? { next_offset: next } : {}),
      };
    },
  });
}
