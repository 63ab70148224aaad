import {
  defineTool,
  noResult,
  RESULT_REF_PATTERN,
  Type,
  type Keys,
  type ToolContext,
  type ToolDefinition,
} from '@agent-reach/protocol';
import { constants, type RedisClient } from '@agent-reach/shared';

const PAGE = constants.DEFAULT_GET_FULL_RESULT_PAGE_CHARS;

/**
 * Pages through the full content of a truncated result by its `ref`. A ref belongs to the call that left
 * it: it is served to the same run, or to the same agent in the same session (any run of that agent when
 * the run that left it had no session). The caller's run, agent and session come from its verified job.
 */
export function createGetFullResult(redis: RedisClient, keys: Keys): ToolDefinition {
  return defineTool({
    name: 'get_full_result',
    description:
      'Read the full content of a tool result that came back with truncated: true, by its ref, one page at a time. ' +
      'Returns the page text (a slice of the full JSON), and next_offset when more remains. Refs expire after an hour.',
    parameters: Type.Object(
      {
        ref: Type.String({
          pattern: RESULT_REF_PATTERN.source,
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
    handler: async ({ ref, offset = 0, limit = PAGE }, ctx) => {
      const full = await readOwned(redis, keys, ref, ctx);
      // Someone else's ref is answered exactly as a missing one: its existence is not revealed.
      if (full === undefined) return noResult(`no stored result under ${ref}; it may have expired`);
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

/** The full content under `ref` when the calling run may read it. */
async function readOwned(
  redis: RedisClient,
  keys: Keys,
  ref: string,
  ctx: Pick<ToolContext, 'runId' | 'agent'>,
): Promise<string | undefined> {
  // Two slots in a cluster: two commands sent together rather than one pipeline. A ref of another
  // shape (an older string one) is answered as missing, as is an unreadable caller session.
  const [stored, caller] = await Promise.all([
    redis.hmget(keys.ref(ref), 'content', 'runId', 'agent', 'sessionId').catch(() => []),
    redis.hget(keys.runMeta(ctx.runId), 'sessionId').catch(() => null),
  ]);
  const [content, runId, agent, sessionId] = stored;
  if (typeof content !== 'string') return undefined;
  if (runId === ctx.runId) return content;
  if (agent !== ctx.agent) return undefined;
  const owned = sessionId ?? '';
  if (owned === '') return content;
  return caller === owned ? content : undefined;
}
