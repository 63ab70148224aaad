import { Queue } from 'bullmq';
import {
  AgentReachError,
  FINAL_WORKFLOW_STATUSES,
  newTraceId,
  newWorkflowId,
  type Keys,
} from '@agent-reach/protocol';
import { constants, type WorkflowSpec, type WorkflowsFile } from '@agent-reach/shared';
import {
  resolveWorkflowStoreOptions,
  WorkflowStore,
  type WorkflowStoreOptions,
  type StoredWorkflowEvent,
  type WorkflowListFilter,
  type WorkflowRecord,
  type WorkflowSummary,
} from './workflow-store.js';
import type { RedisClient } from '@agent-reach/shared';

/** Data of a job on the `agent-workflows` queue; the job id is the workflow id. */
export interface WorkflowJobData {
  v: 1;
  workflow_id: string;
}

/**
 * Workflow ids: the run-id alphabet without `.`, and short enough that `<workflow id>.<node id>` (the
 * id of a node's run) is a valid run id.
 */
export const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9_-]{1,63}$/;

/** The id of a node's run: the same for every coordinator, so a node's run is queued once. */
export const nodeRunId = (workflowId: string, node: string) => `${workflowId}.${node}`;

/** A workflow's definition as the configuration in force declares it, and that configuration's version. */
export interface WorkflowDefinition {
  spec: WorkflowSpec;
  configVersion: number;
}

export interface StartWorkflowRequest {
  /** A workflow of the configuration in force. */
  workflow: string;
  /** The definition already resolved (`resolve`), so that the one checked is the one started. */
  definition?: WorkflowDefinition;
  /** The request: `{{request}}` in the nodes' input templates. */
  input: string;
  workflowId?: string;
  traceId?: string;
  metadata?: Record<string, string>;
  /** The tenant the workflow and its node runs belong to. Default `default`. */
  tenant?: string;
}

export interface WorkflowControlOptions extends WorkflowStoreOptions {
  /** The version of the configuration `workflows` comes from, recorded by each start. Default: always 0. */
  configVersion?: () => number;
}

/** The options with every default filled in. */
export type ResolvedWorkflowControlOptions = Required<WorkflowControlOptions>;

/** Every default of the workflow control (and of its store) in one place. */
export function resolveWorkflowControlOptions(o: WorkflowControlOptions): ResolvedWorkflowControlOptions {
  return { ...resolveWorkflowStoreOptions(o), configVersion: o.configVersion ?? (() => 0) };
}

export function workflowJobOptions(workflowId: string, retentionS?: number) {
  return {
    jobId: workflowId,
    // A step that cannot reach Redis is retried from the record; a killed coordinator's job stalls and
    // another scheduler takes it over.
    attempts: constants.WORKFLOW_JOB_ATTEMPTS,
    backoff: { type: 'exponential', delay: constants.WORKFLOW_JOB_BACKOFF_MS },
    ...(retentionS === undefined
      ? {}
      : { removeOnComplete: { age: retentionS }, removeOnFail: { age: retentionS } }),
  };
}

/**
 * The library API around workflows: start one (its record, then its coordination job on
 * `agent-workflows`), read it, list them, read its events, cancel it. Any process sharing the Redis can
 * use it; the schedulers' coordinators do the work.
 */
export class WorkflowControl {
  readonly store: WorkflowStore;
  readonly queue: Queue<WorkflowJobData>;

  readonly #configVersion: () => number;

  /**
   * `workflows` is read at each start, so a view of the live configuration (`LiveConfig.workflows`) makes
   * new definitions startable at once; `configVersion` is that configuration's version (default 0).
   */
  constructor(
    redis: RedisClient,
    keys: Keys,
    readonly workflows: WorkflowsFile,
    controlOptions: WorkflowControlOptions = {},
  ) {
    const options = resolveWorkflowControlOptions(controlOptions);
    this.#configVersion = options.configVersion;
    this.store = new WorkflowStore(redis, keys, options);
    this.queue = new Queue<WorkflowJobData>(keys.workflowsQueue, {
      connection: redis,
      prefix: keys.queuePrefix(keys.workflowsQueue),
    });
  }

  /**
   * Starts a workflow and returns its id; `created` is false when a workflow with the id existed (then
   * its job is queued again, a no-op unless the first start died between its record and its job).
   */
  async start(req: StartWorkflowRequest): Promise<{ workflowId: string; created: boolean }> {
    const definition = req.definition ?? this.resolve(req.workflow);
    if (!definition) throw new AgentReachError('WORKFLOW_NOT_FOUND', this.unknown(req.workflow));
    const { spec, configVersion } = definition;
    if (typeof req.input !== 'string' || !req.input.trim())
      throw new AgentReachError('WORKFLOW_INVALID', 'input must be a non-empty string');
    const workflowId = req.workflowId ?? newWorkflowId();
    if (!WORKFLOW_ID_PATTERN.test(workflowId))
      throw new AgentReachError('WORKFLOW_INVALID', `workflow id must match ${WORKFLOW_ID_PATTERN}`);
    const created = await this.store.create({
      workflowId,
      name: spec.name,
      input: req.input,
      spec,
      configVersion,
      traceId: req.traceId ?? newTraceId(),
      ...(req.metadata ? { metadata: req.metadata } : {}),
      ...(req.tenant ? { tenant: req.tenant } : {}),
      createdAt: Date.now(),
    });
    await this.queue.add('workflow', { v: 1, workflow_id: workflowId }, workflowJobOptions(workflowId));
    return { workflowId, created };
  }

  /** The definition of `name` in the configuration in force, with its version; undefined when it has none. */
  resolve(name: string): WorkflowDefinition | undefined {
    // Read together, with nothing awaited in between: the version is the one the definition is from.
    const spec = this.workflows.workflows.get(name);
    return spec ? { spec, configVersion: this.#configVersion() } : undefined;
  }

  /** Why `name` cannot be started: the configuration in force does not declare it. */
  unknown(name: string): string {
    const known = [...this.workflows.workflows.keys()];
    return `unknown workflow "${name}" (not in configuration version ${this.#configVersion()}); declared: ${known.join(', ') || '(none)'}`;
  }

  get(workflowId: string): Promise<WorkflowRecord | undefined> {
    return this.store.load(workflowId);
  }

  list(filter?: WorkflowListFilter): Promise<WorkflowSummary[]> {
    return this.store.list(filter);
  }

  events(workflowId: string, after?: string): Promise<StoredWorkflowEvent[]> {
    return this.store.events(workflowId, after);
  }

  /** Cancels a running workflow: its coordinator cancels the node runs still going and ends it. */
  async cancel(workflowId: string): Promise<void> {
    if (!(await this.store.requestCancel(workflowId)))
      throw new AgentReachError('WORKFLOW_NOT_FOUND', `unknown workflow ${workflowId}`);
    await this.wake(workflowId);
  }

  /** A waiting workflow is a delayed job: promote it so that a coordinator looks at it now. */
  async wake(workflowId: string): Promise<void> {
    const job = await this.queue.getJob(workflowId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }

  /** Waits for a workflow to end (polling its record), up to `timeoutMs`. */
  async wait(workflowId: string, timeoutMs = 60_000, pollMs = 50): Promise<WorkflowRecord> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const record = await this.store.load(workflowId);
      if (record?.outcome && FINAL_WORKFLOW_STATUSES.has(record.status)) return record;
      if (Date.now() > end)
        throw new AgentReachError(
          'RUN_WAIT_TIMEOUT',
          `workflow ${workflowId} did not finish within ${timeoutMs} ms`,
        );
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
