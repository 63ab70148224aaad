import { Type, type Static } from '@sinclair/typebox';
import { NAME_PATTERN } from './ids.js';
import {
  Callback,
  CallbackView,
  DEFAULT_LIST_LIMIT,
  Input,
  MAX_LIST_LIMIT,
  MAX_LIST_OFFSET,
  Metadata,
  Millis,
} from './api-schemas.js';

/** JSON Schemas of the workflow routes (snake_case on the wire, like the run routes). */

/** A workflow's status: `running` until it ends in one of the other four. */
export const WORKFLOW_STATUSES = ['running', 'succeeded', 'failed', 'aborted', 'cancelled'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];
export const FINAL_WORKFLOW_STATUSES: ReadonlySet<WorkflowStatus> = new Set([
  'succeeded',
  'failed',
  'aborted',
  'cancelled',
]);
export const isFinalWorkflowStatus = (status: string): boolean =>
  FINAL_WORKFLOW_STATUSES.has(status as WorkflowStatus);
const NODE_STATUSES = [
  'waiting',
  'running',
  'succeeded',
  'defaulted',
  'failed',
  'cancelled',
  'skipped',
] as const;

export const WorkflowParams = Type.Object(
  {
    id: Type.String({
      pattern: '^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_-]{1,63}$',
      description: 'workflow id: 1-63 of A-Z a-z 0-9 _ -',
    }),
  },
  { additionalProperties: false },
);

export const CreateWorkflowBody = Type.Object(
  {
    workflow: Type.String({ pattern: NAME_PATTERN.source, description: 'a workflow of the workflows file' }),
    input: Input,
    metadata: Type.Optional(Metadata),
    callback: Type.Optional(Callback),
  },
  { additionalProperties: false },
);
export type CreateWorkflowBody = Static<typeof CreateWorkflowBody>;

export const ListWorkflowsQuery = Type.Object(
  {
    workflow: Type.Optional(Type.String({ pattern: NAME_PATTERN.source })),
    status: Type.Optional(Type.String({ enum: [...WORKFLOW_STATUSES] })),
    limit: Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, default: DEFAULT_LIST_LIMIT }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_LIST_OFFSET, default: 0 }),
  },
  { additionalProperties: false },
);
export type ListWorkflowsQuery = Static<typeof ListWorkflowsQuery>;

export const WaitRecord = Type.Object({
  node: Type.String(),
  agent: Type.String(),
  state: Type.String({ enum: ['waiting', 'running'] }),
  waiting_on: Type.Array(Type.String(), { description: 'the nodes it waited on (none when running)' }),
  since: Millis('epoch ms: the workflow start for a waiting node, its run start for a running one'),
  run_id: Type.Optional(Type.String()),
  why: Type.String(),
});
export const AbortReport = Type.Object(
  {
    timed_out: Type.String({ description: 'the node whose timeout aborted the workflow' }),
    timeout_ms: Type.Integer(),
    at: Millis('epoch ms'),
    waits: Type.Array(WaitRecord),
    text: Type.String({ description: 'the waits, one line each' }),
  },
  { description: 'who was waiting on whom, since when and why, when the watchdog aborted the workflow' },
);

export const WorkflowNode = Type.Object({
  id: Type.String(),
  agent: Type.String(),
  depends_on: Type.Array(Type.String()),
  status: Type.String({
    enum: [...NODE_STATUSES],
    description:
      'waiting (on dependencies), running, succeeded, defaulted (its declared default, low-confidence), failed; cancelled (its run was cancelled) or skipped (never started) when the workflow ended first, or when nothing needed its output any more (the watchdog gave every node waiting on it a default), `reason` saying why',
  }),
  run_id: Type.Optional(Type.String({ description: "the node's run: /v1/runs/{run_id}" })),
  timeout_ms: Type.Integer(),
  on_timeout: Type.String({ enum: ['abort', 'default'] }),
  started_at: Type.Optional(Millis('epoch ms when its run was queued')),
  finished_at: Type.Optional(Millis('epoch ms when its result was recorded')),
  waited_ms: Type.Optional(Type.Integer({ description: 'how long it waited for its dependencies' })),
  output: Type.Optional(Type.String()),
  low_confidence: Type.Boolean({
    description:
      'its output is its declared default, or an answer made from a low-confidence input (a → b → c: a defaulted makes b and c low-confidence)',
  }),
  low_confidence_from: Type.Optional(
    Type.Array(Type.String(), {
      description: 'the defaulted nodes its low-confidence output rests on (itself, when defaulted)',
    }),
  ),
  low_confidence_inputs: Type.Array(Type.String(), {
    description: 'dependencies whose low-confidence outputs its input used',
  }),
  reason: Type.Optional(
    Type.String({
      description:
        'why it did not succeed: run_failed, timeout, …; for a cancelled or skipped node what ended the workflow, e.g. "node b failed"',
    }),
  ),
  error: Type.Optional(Type.String({ description: "a failed node's run: how it ended, and its report" })),
});

const summaryFields = {
  workflow_id: Type.String(),
  workflow: Type.String(),
  status: Type.String({ enum: [...WORKFLOW_STATUSES] }),
  created_at: Millis('epoch ms'),
  updated_at: Millis('epoch ms'),
  finished_at: Type.Optional(Millis('epoch ms')),
  cancel_requested: Type.Boolean(),
  reason: Type.Optional(Type.String({ description: 'why it ended, once it has' })),
  low_confidence: Type.Boolean({
    description:
      'some node produced or used a low-confidence default (so far, while it runs): its output may rest on a stand-in',
  }),
};
export const WorkflowSummaryView = Type.Object(summaryFields);
export type WorkflowSummaryView = Static<typeof WorkflowSummaryView>;

export const WorkflowView = Type.Object({
  ...summaryFields,
  input: Type.String(),
  trace_id: Type.String(),
  config_version: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        'version of the fleet configuration whose definition the workflow runs (0: local files); kept for its whole life',
    }),
  ),
  metadata: Type.Optional(Metadata),
  output: Type.Optional(Type.String()),
  error: Type.Optional(Type.String({ description: 'what went wrong, for a failed workflow' })),
  failed_node: Type.Optional(
    Type.String({ description: 'the node whose run failed and so failed the workflow (reason node_failed)' }),
  ),
  report: Type.Optional(AbortReport),
  nodes: Type.Array(WorkflowNode),
  callback: Type.Optional(CallbackView),
});
export type WorkflowView = Static<typeof WorkflowView>;

export const WorkflowList = Type.Object({
  workflows: Type.Array(WorkflowSummaryView),
  next_offset: Type.Optional(Type.Integer({ description: 'offset of the next page; absent on the last' })),
});
export type WorkflowList = Static<typeof WorkflowList>;
export type WorkflowNode = Static<typeof WorkflowNode>;
export type AbortReport = Static<typeof AbortReport>;
export type WaitRecord = Static<typeof WaitRecord>;
