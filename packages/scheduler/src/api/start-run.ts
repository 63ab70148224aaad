import { createHash } from 'node:crypto';
import { assertAgentAllowed, idempotencyScope, type Principal } from './auth.js';
import { assertHandoffReach } from './handoff-doors.js';
import { ApiError, notFound } from './errors.js';
import { bodyHash } from './idempotency.js';
import { admitRun } from './tenant-admission.js';
import type { ApiContext } from './options.js';
import { loadRun, queuedView } from './run-view.js';
import { checkCallback, checkGrants } from './run-request.js';
import { checkVariant } from './run-variant-check.js';
import {
  newRunId,
  newTraceId,
  runJob,
  TRACEPARENT_PATTERN,
  type RunCallback,
  type RunVariant,
  type RunView,
} from '@agent-reach/protocol';

/** A run to start, as `POST /v1/runs` and `POST /v1/sessions/:id/messages` receive it. */
export interface StartRunInput {
  agent: string;
  input: string;
  session_id?: string;
  metadata?: Record<string, string>;
  model?: string;
  /** JSON Schema the final answer must match (checked by `checkRunRequest`). */
  output_schema?: Record<string, unknown>;
  /** Tools requiring a grant the run may call; in a session, granted for the rest of it. */
  grants?: string[];
  /** Signed deliveries of the run's events (checked by `checkCallback`). */
  callback?: RunCallback;
  /** The agent in charge at the start, when not `agent` (a session's last handoff target). */
  in_charge?: string;
  /** Overrides of the agent's configuration for this run only (checked by `checkVariant`). */
  variant?: RunVariant;
}

/**
 * Starts a run for a caller: the key must reach the agent (403), the agent must exist (422
 * UNKNOWN_AGENT), a named session must exist (404). With an idempotency key, the run's id derives from
 * the key, so every request with it converges on one run: the first claims the key and queues the run;
 * a repeat with the same body gets the same run — and queues it when the first request died between
 * its claim and its queueing (adding a job whose id exists is a no-op) —, with another body a 409.
 */
export async function startRun(
  ctx: ApiContext,
  principal: Principal,
  req: StartRunInput,
  idempotencyKey?: string,
  traceparent?: string,
): Promise<{ run: RunView; created: boolean }> {
  const { control, agents } = ctx.deps;
  assertAgentAllowed(principal, req.agent);
  assertHandoffReach(principal, req.agent, agents);
  // A repeat gets what the first request created even when its agent has left the configuration since.
  const repeated =
    idempotencyKey === undefined ? undefined : await repeatOf(ctx, principal, req, idempotencyKey);
  if (repeated) return { run: repeated, created: false };
  if (!agents.agents.has(req.agent)) {
    const known = [...agents.agents.keys()].filter((a) => !principal.agents || principal.agents.has(a));
    throw new ApiError('UNKNOWN_AGENT', `unknown agent "${req.agent}"; known: ${known.join(', ')}`);
  }
  if (req.session_id && !(await ctx.deps.sessions.exists(req.session_id, principal.tenant)))
    throw notFound(`session ${req.session_id}`);
  checkGrants(ctx, req.agent, req.grants);
  checkVariant(ctx, principal, req.agent, req.variant);
  await checkCallback(ctx, req.callback, principal.name);

  const derived =
    idempotencyKey === undefined ? undefined : idempotentIds(idempotencyScope(principal), idempotencyKey);
  // A caller's valid `traceparent` makes the run part of its trace; a malformed one is ignored (W3C).
  const parent = traceparent !== undefined && TRACEPARENT_PATTERN.test(traceparent) ? traceparent : undefined;
  const data = runJob({
    run_id: derived?.runId ?? newRunId(),
    trace_id: parent?.split('-')[1] ?? derived?.traceId ?? newTraceId(),
    trace_parent: parent,
    agent: req.agent,
    input: req.input,
    session_id: req.session_id,
    model: req.model,
    metadata: req.metadata,
    created_at: Date.now(),
    tenant: principal.tenant,
    output_schema: req.output_schema,
    key: principal.name,
    grants: req.grants,
    callback: req.callback,
    in_charge: req.in_charge,
    variant: req.variant,
  });
  // Before the idempotency claim: a refused request claims nothing, so its repeat is admitted afresh.
  await admitRun(ctx, principal.tenant, data.run_id);
  let created = true;
  if (idempotencyKey !== undefined) {
    const hash = bodyHash(req);
    // Twice: the key may expire between a refused SET NX and the read of its record.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const claim = await ctx.idempotency.claim(idempotencyScope(principal), idempotencyKey, {
        runId: data.run_id,
        bodyHash: hash,
      });
      if (claim.claimed) break;
      if (!claim.existing) continue;
      if (claim.existing.bodyHash !== hash)
        throw new ApiError('CONFLICT', 'this Idempotency-Key was already used with a different body');
      const existing = await loadRun(control, claim.existing.runId);
      if (existing) return { run: existing.view, created: false };
      // Claimed by a request that never queued its run: queue it now, under the id the claim names.
      created = false;
      data.run_id = claim.existing.runId;
      if (!parent) data.trace_id = createHash('sha256').update(data.run_id).digest('hex').slice(0, 32);
      break;
    }
  }
  if (req.session_id && req.grants)
    await ctx.deps.sessions.addGrants(req.session_id, req.grants, principal.tenant);
  await control.enqueue(data);
  ctx.log.info(
    {
      runId: data.run_id,
      traceId: data.trace_id,
      agent: data.agent,
      tenant: principal.tenant,
      key: principal.name,
      created,
    },
    created ? 'run created' : 'run queued again for a repeated request',
  );
  return { run: queuedView(data, data.created_at ?? Date.now()), created };
}

/**
 * The run an earlier request with this key created, when it exists: the same body gets it, another body
 * is a 409. Undefined when the key is unused or its run was never queued (the caller goes on to queue it).
 */
async function repeatOf(
  ctx: ApiContext,
  principal: Principal,
  req: StartRunInput,
  idempotencyKey: string,
): Promise<RunView | undefined> {
  const existing = await ctx.idempotency.peek(idempotencyScope(principal), idempotencyKey);
  if (!existing) return undefined;
  if (existing.bodyHash !== bodyHash(req))
    throw new ApiError('CONFLICT', 'this Idempotency-Key was already used with a different body');
  return (await loadRun(ctx.deps.control, existing.runId))?.view;
}

/** The run and trace ids of an idempotent request, the same for every request with the key. */
function idempotentIds(principalId: string, idempotencyKey: string): { runId: string; traceId: string } {
  const h = createHash('sha256').update(`${principalId}\n${idempotencyKey}`).digest('hex');
  return { runId: `run_${h.slice(0, 32)}`, traceId: h.slice(32, 64) };
}
