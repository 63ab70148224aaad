import { randomUUID } from 'node:crypto';
import type { RunJobData } from '../runs/run-jobs.js';
import { assertAgentAllowed, type Principal } from './auth.js';
import { ApiError, notFound } from './errors.js';
import { bodyHash } from './idempotency.js';
import type { ApiContext } from './options.js';
import { loadRun, queuedView } from './run-view.js';
import type { RunView } from './schemas.js';

/** A run to start, as `POST /v1/runs` and `POST /v1/sessions/:id/messages` receive it. */
export interface StartRunInput {
  agent: string;
  input: string;
  session_id?: string;
  metadata?: Record<string, string>;
  model?: string;
}

/**
 * Starts a run for a caller: the key must reach the agent (403), the agent must exist (422
 * UNKNOWN_AGENT), a named session must exist (404). With an idempotency key, the first request claims
 * it and starts the run; a repeat with the same body gets the same run, with another body a 409.
 */
export async function startRun(
  ctx: ApiContext,
  principal: Principal,
  req: StartRunInput,
  idempotencyKey?: string,
): Promise<{ run: RunView; created: boolean }> {
  const { control, agents, redis, keys } = ctx.deps;
  assertAgentAllowed(principal, req.agent);
  if (!agents.agents.has(req.agent)) {
    const known = [...agents.agents.keys()].filter((a) => !principal.agents || principal.agents.has(a));
    throw new ApiError(422, 'UNKNOWN_AGENT', `unknown agent "${req.agent}"; known: ${known.join(', ')}`);
  }
  if (req.session_id && (await redis.exists(keys.session(req.session_id))) === 0)
    throw notFound(`session ${req.session_id}`);

  const data: RunJobData = {
    v: 1,
    runId: `run_${randomUUID()}`,
    traceId: randomUUID().replace(/-/g, ''),
    agent: req.agent,
    input: req.input,
    ...(req.session_id ? { sessionId: req.session_id } : {}),
    ...(req.model ? { model: req.model } : {}),
    ...(req.metadata ? { metadata: req.metadata } : {}),
  };
  if (idempotencyKey !== undefined) {
    const hash = bodyHash(req);
    // Twice: the key may expire between a refused SET NX and the read of its record.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const claim = await ctx.idempotency.claim(principal.id, idempotencyKey, {
        runId: data.runId,
        bodyHash: hash,
      });
      if (claim.claimed) break;
      if (!claim.existing) continue;
      if (claim.existing.bodyHash !== hash)
        throw new ApiError(409, 'CONFLICT', 'this Idempotency-Key was already used with a different body');
      const existing = await loadRun(control, claim.existing.runId);
      return {
        run: existing?.view ?? queuedView({ ...data, runId: claim.existing.runId, traceId: '' }),
        created: false,
      };
    }
  }
  try {
    await control.start({
      runId: data.runId,
      agent: data.agent,
      input: data.input,
      ...(data.traceId ? { traceId: data.traceId } : {}),
      ...(data.sessionId ? { sessionId: data.sessionId } : {}),
      ...(data.model ? { model: data.model } : {}),
      ...(data.metadata ? { metadata: data.metadata } : {}),
    });
  } catch (err) {
    if (idempotencyKey !== undefined)
      await ctx.idempotency.release(principal.id, idempotencyKey, data.runId).catch(() => undefined);
    throw err;
  }
  ctx.log.info(
    { runId: data.runId, traceId: data.traceId, agent: data.agent, key: principal.name },
    'run created',
  );
  return { run: queuedView(data), created: true };
}
