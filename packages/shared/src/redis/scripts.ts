import { readFileSync } from 'node:fs';
import type { RedisClient } from './connection.js';

type Arg = string | number;

/**
 * The platform's Lua scripts, one file each in `commands/` (`<name>-<number of keys>.lua`, or `<name>-n.lua`
 * for a script given as many keys as a call needs, with a header
 * listing KEYS and ARGV), as typed functions: keys first, then arguments, in the order the header lists.
 */
export interface RedisScripts {
  /**
   * `checkpoint-n.lua`: one fenced, sequenced checkpoint of a run; resolves to `[verdict, cancel flag]`.
   * It is given the keys it writes: the first four, seven when it records calls, all eight at the end.
   */
  checkpoint(
    keys:
      | readonly [meta: string, state: string, messages: string, events: string]
      | readonly [
          meta: string,
          state: string,
          messages: string,
          events: string,
          results: string,
          approvals: string,
          calls: string,
          starts?: string,
        ],
    args: readonly Arg[],
  ): Promise<[verdict: string, cancel: string]>;
  /**
   * `claim-4.lua`: takes ownership of a run and reads its record; a run listed `queued` that has no
   * checkpoint yet is `running` from `now` on.
   */
  claim(
    keys: readonly [meta: string, state: string, messages: string, approvals: string],
    args: readonly [now: number],
  ): Promise<
    [epoch: number, seq: string, cancel: string, state: string, messages: string[], decisions: string[]]
  >;
  /**
   * `record-result-2.lua`: the first result of a call the run's ledger holds; resolves to the recorded one
   * on a duplicate, else null (also when the ledger no longer holds the call: the run has ended).
   */
  recordResult(
    keys: readonly [results: string, calls: string],
    args: readonly [toolCallId: string, resultJson: string, resultsTtlS: number],
  ): Promise<string | null>;
  /**
   * `record-reply-3.lua` (a single Redis only: its keys are on different slots of a cluster): records the
   * first result of a call the run's ledger holds and pushes the recorded one onto the reply list; resolves
   * to the recorded one on a duplicate, else null (also when the ledger no longer holds the call).
   */
  recordReply(
    keys: readonly [results: string, replies: string, calls: string],
    args: readonly [toolCallId: string, resultJson: string, ttlS: number, replyPrefix: string],
  ): Promise<string | null>;
  /** `record-first-1.lua`: records a result unless the call has one; resolves to the recorded one. */
  recordFirst(
    keys: readonly [results: string],
    args: readonly [toolCallId: string, resultJson: string, ttlS: number],
  ): Promise<string>;
  /**
   * `verify-start-4.lua`: checks a tool job against its run's record and, when it passes, records the
   * call's start in the run's ledger; resolves to
   * `[verdict, detail, session id, grants, approved, granted, decided]`.
   */
  verifyStart(
    keys: readonly [meta: string, calls: string, approvals: string, results: string],
    args: readonly Arg[],
  ): Promise<
    [
      verdict: string,
      detail: string | null,
      sessionId: string | null,
      grants: string | null,
      approved: string,
      granted?: string,
      decided?: string,
    ]
  >;
  /** `withdraw-call-3.lua`: a dispatcher withdraws a publication of a call nobody started. */
  withdrawCall(
    keys: readonly [results: string, calls: string, legacyStarts: string],
    args: readonly [toolCallId: string, publication: number, ttlS: number],
  ): Promise<[verdict: 'started' | 'withdrawn'] | [verdict: 'recorded', result: string]>;
  /** `heartbeat-1.lua`: one executor announcement; resolves to Redis's time in ms. */
  heartbeat(
    keys: readonly [catalog: string],
    args: readonly [executorId: string, ttlMs: number, body: string],
  ): Promise<number>;
  /** `renew-lease-1.lua`: 1 when the holder still held the lease and renewed it, else 0. */
  renewLease(
    keys: readonly [lease: string],
    args: readonly [holder: string, leaseMs: number],
  ): Promise<number>;
  /** `release-lease-1.lua`: 1 when the holder held the lease and gave it up, else 0. */
  releaseLease(keys: readonly [lease: string], args: readonly [holder: string]): Promise<number>;
  /**
   * `provider-acquire-4.lua`: one try of a model request at its provider's fleet-wide slot and rate start,
   * waiters served in the order they first tried; `[1, 0]` admitted, else `[0, ms until a start frees]`.
   */
  providerAcquire(
    keys: readonly [slots: string, starts: string, waiters: string, lastTries: string],
    args: readonly [
      holder: string,
      leaseMs: number,
      concurrency: number,
      rateMax: number,
      windowMs: number,
      staleMs: number,
    ],
  ): Promise<[admitted: number, waitMs: number]>;
  /** `provider-renew-1.lua`: 1 when the holder still held its provider slot and renewed its lease, else 0. */
  providerRenew(
    keys: readonly [slots: string],
    args: readonly [holder: string, leaseMs: number],
  ): Promise<number>;
  /** `tenant-admit-2.lua`: `[verdict ('ok' | 'runs' | 'tokens'), runs in flight, tokens used today]`. */
  tenantAdmit(
    keys: readonly [inFlight: string, tokensToday: string],
    args: readonly [runId: string, nowMs: number, maxRunsInFlight: number, maxTokensPerDay: number],
  ): Promise<[verdict: string, inFlight: number, tokensToday: number]>;
  /** `tenant-release-2.lua`: 1 when the run was in flight and its tokens are counted now, else 0. */
  tenantRelease(
    keys: readonly [inFlight: string, tokensToday: string],
    args: readonly [runId: string, tokens: number, ttlS: number],
  ): Promise<number>;
  /** `workflow-create-2.lua`: 1 when the workflow's record was created, 0 when it exists. */
  workflowCreate(keys: readonly [meta: string, events: string], args: readonly string[]): Promise<number>;
  /** `workflow-transition-4.lua`: 1 when the transition was applied (once), else 0. */
  workflowTransition(
    keys: readonly [meta: string, started: string, done: string, events: string],
    args: readonly Arg[],
  ): Promise<number>;
}

const FILES: Readonly<Record<keyof RedisScripts, string>> = {
  checkpoint: 'checkpoint-n',
  claim: 'claim-4',
  recordResult: 'record-result-2',
  recordReply: 'record-reply-3',
  recordFirst: 'record-first-1',
  verifyStart: 'verify-start-4',
  withdrawCall: 'withdraw-call-3',
  heartbeat: 'heartbeat-1',
  renewLease: 'renew-lease-1',
  releaseLease: 'release-lease-1',
  providerAcquire: 'provider-acquire-4',
  providerRenew: 'provider-renew-1',
  tenantAdmit: 'tenant-admit-2',
  tenantRelease: 'tenant-release-2',
  workflowCreate: 'workflow-create-2',
  workflowTransition: 'workflow-transition-4',
};

const sources = new Map<string, string>();

/** A script's source, read once from the package's `commands/` directory (in src or dist). */
function source(file: string): string {
  let lua = sources.get(file);
  if (lua === undefined) {
    lua = readFileSync(new URL(`./commands/${file}.lua`, import.meta.url), 'utf8');
    sources.set(file, lua);
  }
  return lua;
}

const defined = new WeakMap<RedisClient, RedisScripts>();

/**
 * The scripts, defined on `client` (ioredis `defineCommand`: EVALSHA, falling back to EVAL when Redis
 * does not have the script yet, as after a restart or a failover). Defined once per client.
 */
export function redisScripts(client: RedisClient): RedisScripts {
  const known = defined.get(client);
  if (known) return known;
  const commands = client as unknown as Record<string, (...keysAndArgs: Arg[]) => Promise<unknown>>;
  const scripts = Object.fromEntries(
    Object.entries(FILES).map(([name, file]) => {
      const command = `agentReach_${name}`;
      // `-n`: as many keys as each call passes, their count sent first (EVALSHA's numkeys).
      const fixed = /-(\d+)$/.exec(file)?.[1];
      if (typeof commands[command] !== 'function') {
        client.defineCommand(command, {
          ...(fixed === undefined ? {} : { numberOfKeys: Number(fixed) }),
          lua: source(file),
        });
      }
      const run = commands[command] as (...keysAndArgs: Arg[]) => Promise<unknown>;
      const call =
        fixed === undefined
          ? (keys: readonly string[], args: readonly Arg[] = []) =>
              run.call(client, keys.length, ...keys, ...args)
          : (keys: readonly string[], args: readonly Arg[] = []) => run.call(client, ...keys, ...args);
      return [name, call];
    }),
  ) as unknown as RedisScripts;
  defined.set(client, scripts);
  return scripts;
}
