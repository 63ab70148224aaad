/** Prefix of every Redis key and BullMQ queue the platform owns. */
export const DEFAULT_KEY_PREFIX = 'ar';

/**
 * Names of every queue and Redis key the platform owns, derived from one prefix so that tests (and
 * tenants) can run side by side on one Redis without meeting. Every key starts with `<prefix>:`.
 *
 * Laid out for Redis Cluster, and the same on a single Redis: every key of one run carries the run's
 * hash tag (`<prefix>:{run:<id>}:…`), so a script over them touches one slot; each BullMQ queue carries
 * its own tag in its prefix (`queuePrefix`), so tool groups spread over the shards; the fleet's breakers
 * and catalog share the `{fleet}` tag (read together); every other key is on a slot of its own, and no
 * script, transaction or pipeline spans two slots.
 */
export interface Keys {
  readonly prefix: string;
  /** BullMQ queue name of a tool group; its BullMQ `prefix` is `queuePrefix(name)`. */
  toolQueue(group: string): string;
  /** The BullMQ `prefix` option of a queue: `<prefix>:{<name>}`, which keeps all its keys on one slot. */
  queuePrefix(queue: string): string;
  /** Hash: toolCallId → serialized ToolResult, the run's record of finished calls. */
  results(runId: string): string;
  /** List a dispatcher's replies are pushed to. */
  replies(dispatcherId: string): string;
  /** Hash: the full JSON of a truncated result (`content`) and its owner (`runId`, `agent`, `sessionId`). */
  ref(refId: string): string;
  /** Hash: tool → serialized BreakerSnapshot, the fleet's view of breakers. */
  readonly breakers: string;
  /** Pub/sub channel of breaker transitions. */
  readonly breakerChannel: string;
  /**
   * Hash: executor id → its ExecutorAnnouncement (groups served, tools registered, expiry), refreshed by
   * each executor's heartbeat; the fleet's catalog is the union of the live ones.
   */
  readonly catalog: string;
  /**
   * Hash: MCP tool (`<server>__<tool>`) → the digest of its description, schema and annotations first
   * seen by the fleet (trust on first use), unless a configuration pins one.
   */
  readonly mcpPins: string;
  /** BullMQ queue of runs (schedulers are its workers). */
  readonly runsQueue: string;
  /** String: a run's state without its messages (JSON). */
  runState(runId: string): string;
  /** List: a run's messages, one JSON each (appended per step, rewritten on compaction). */
  runMessages(runId: string): string;
  /** Stream: a run's events. */
  runEvents(runId: string): string;
  /** Pub/sub channel: the answer text of a run's model turns as it streams (live only, never stored). */
  runDeltas(runId: string): string;
  /** Hash: a run's listing fields (agent, status, times, trace id, cancel request). */
  runMeta(runId: string): string;
  /** Hash: toolCallId → a person's decision (JSON), written by approve/reject while the run is parked. */
  runApprovals(runId: string): string;
  /**
   * Hash: toolCallId → the call as the model made it (`callLedgerEntry`), written by the checkpoint that
   * records the model turn, before the call is published. Executors run only calls found here. Also
   * `<toolCallId>:start` (`callStartField`) → `started:<publication>:<executor>` (an executor is running it;
   * written right before the tool runs) or `withdrawn:<publication>` (its dispatcher gave that publication
   * up unstarted): what the dispatcher asks to tell a call that started from one that did not, whatever
   * its queue says.
   */
  runCalls(runId: string): string;
  /**
   * Hash: toolCallId → a start or a withdrawal, as the release before this one recorded them (see
   * `runCalls`). Read and written by dispatchers only on a call's deadline, while a fleet is upgraded.
   */
  runStarts(runId: string): string;
  /** Sorted set: run ids by creation time. */
  readonly runIndex: string;
  /** Pub/sub channel: run ids whose cancellation was requested. */
  readonly cancelChannel: string;
  /**
   * Hash: the fleet's published configuration — `version` (only ever increases), `document` (the
   * validated JSON bundle: agents, tool groups, …), `digest`, `applied_at`, `source`.
   */
  readonly config: string;
  /**
   * Sorted set: the last published configuration versions (score: version; member: JSON of the
   * version, digest, time, who applied it, how, and its document).
   */
  readonly configHistory: string;
  /** Pub/sub channel: a new configuration version was published (the message is its version). */
  readonly configChannel: string;
  /** String: a session's shared memory (history, summary, task stack). */
  session(sessionId: string): string;
  /** String: the run id an idempotency key created. */
  idempotency(key: string): string;
  /** String: the run an MCP tool call started (or a mark that the call was cancelled before it started). */
  mcpCall(key: string): string;
  /** BullMQ queue of workflow coordination jobs (one job per workflow, its id the workflow id). */
  readonly workflowsQueue: string;
  /** Hash: a workflow's record (definition, input, status, times, outcome, cancel request). */
  workflowMeta(workflowId: string): string;
  /** Hash: node id → when its run was started and under which run id (first start wins, HSETNX). */
  workflowStarted(workflowId: string): string;
  /** Hash: node id → its output, status and confidence (first result wins, HSETNX). */
  workflowDone(workflowId: string): string;
  /** Stream: a workflow's events. */
  workflowEvents(workflowId: string): string;
  /** Sorted set: workflow ids by creation time. */
  readonly workflowIndex: string;
  /** Sorted set: a tenant's runs in flight (run id → epoch ms admitted), on the tenant's slot. */
  tenantInFlight(tenant: string): string;
  /** String: the tokens a tenant's runs used on a UTC day (`YYYY-MM-DD`), on the tenant's slot. */
  tenantTokens(tenant: string, day: string): string;
  /**
   * A model provider's fleet-wide limits, on the provider's slot: `slots` (sorted set: lease id → lease
   * expiry), `starts` (sorted set: request starts in the rate window), `waiters` (sorted set: waiter →
   * first try) and `lastTries` (hash: waiter → its last try).
   */
  providerLimits(provider: string): ProviderLimitKeys;
  /** String: an eval report (JSON `{ tenant, report }`), expiring with the run retention. */
  evalReport(evalId: string): string;
  /** Sorted set: a tenant's eval ids by the time they were stored (epoch ms). */
  evalIndex(tenant: string): string;
}

/** The keys of one provider's fleet-wide limits (see `Keys.providerLimits`). */
export interface ProviderLimitKeys {
  readonly slots: string;
  readonly starts: string;
  readonly waiters: string;
  readonly lastTries: string;
}

export function createKeys(prefix: string = DEFAULT_KEY_PREFIX): Keys {
  const run = (id: string) => `${prefix}:{run:${id}}`;
  const workflow = (id: string) => `${prefix}:{wf:${id}}`;
  return Object.freeze({
    prefix,
    toolQueue: (group: string) => `tools-${group}`,
    queuePrefix: (queue: string) => `${prefix}:{${queue}}`,
    results: (runId: string) => `${run(runId)}:results`,
    replies: (id: string) => `${prefix}:replies:${id}`,
    ref: (id: string) => `${prefix}:ref:${id}`,
    breakers: `${prefix}:{fleet}:breakers`,
    breakerChannel: `${prefix}:breaker-events`,
    catalog: `${prefix}:{fleet}:catalog`,
    mcpPins: `${prefix}:{fleet}:mcp-pins`,
    runsQueue: 'agent-runs',
    runState: (id: string) => `${run(id)}:state`,
    runMessages: (id: string) => `${run(id)}:messages`,
    runEvents: (id: string) => `${run(id)}:events`,
    runDeltas: (id: string) => `${run(id)}:deltas`,
    runMeta: (id: string) => `${run(id)}:meta`,
    runApprovals: (id: string) => `${run(id)}:approvals`,
    runCalls: (id: string) => `${run(id)}:calls`,
    runStarts: (id: string) => `${run(id)}:starts`,
    runIndex: `${prefix}:runs`,
    cancelChannel: `${prefix}:run-cancel`,
    config: `${prefix}:config`,
    configHistory: `${prefix}:config:history`,
    configChannel: `${prefix}:config-events`,
    session: (id: string) => `${prefix}:session:${id}`,
    idempotency: (key: string) => `${prefix}:idem:${key}`,
    mcpCall: (key: string) => `${prefix}:mcp-call:${key}`,
    workflowsQueue: 'agent-workflows',
    workflowMeta: (id: string) => `${workflow(id)}:meta`,
    workflowStarted: (id: string) => `${workflow(id)}:started`,
    workflowDone: (id: string) => `${workflow(id)}:done`,
    workflowEvents: (id: string) => `${workflow(id)}:events`,
    workflowIndex: `${prefix}:workflows`,
    tenantInFlight: (tenant: string) => `${prefix}:{tenant:${tenant}}:in-flight`,
    tenantTokens: (tenant: string, day: string) => `${prefix}:{tenant:${tenant}}:tokens:${day}`,
    providerLimits: (provider: string) => {
      const base = `${prefix}:{provider:${provider}}`;
      return {
        slots: `${base}:slots`,
        starts: `${base}:starts`,
        waiters: `${base}:waiters`,
        lastTries: `${base}:waiter-tries`,
      };
    },
    evalReport: (id: string) => `${prefix}:eval:${id}`,
    evalIndex: (tenant: string) => `${prefix}:evals:${tenant}`,
  });
}
