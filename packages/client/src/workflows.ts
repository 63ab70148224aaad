import { isFinalWorkflowStatus } from '@agent-reach/protocol';
import type { CreateWorkflowInput, ListWorkflowsFilter, StreamOptions, WaitOptions } from './client-api.js';
import { resolveWaitOptions } from './options.js';
import { call, idempotencyHeaders, query, stream, type ClientContext } from './request.js';
import type { StreamedWorkflowEvent, Workflow, WorkflowList } from './types.js';
import { follow } from './wait.js';

export const workflowPath = (id: string): string => `/v1/workflows/${encodeURIComponent(id)}`;

export const createWorkflow = (ctx: ClientContext, i: CreateWorkflowInput) =>
  call<Workflow>(ctx, 'POST', '/v1/workflows', {
    body: {
      workflow: i.workflow,
      input: i.input,
      ...(i.metadata ? { metadata: i.metadata } : {}),
      ...(i.callback ? { callback: i.callback } : {}),
    },
    ...idempotencyHeaders(i.idempotencyKey),
  });

export const listWorkflows = (ctx: ClientContext, f: ListWorkflowsFilter = {}) =>
  call<WorkflowList>(ctx, 'GET', `/v1/workflows${query(f)}`);

export const streamWorkflowEvents = (ctx: ClientContext, id: string, o?: StreamOptions) =>
  stream<StreamedWorkflowEvent>(ctx, `${workflowPath(id)}/events`, o);

export const waitForWorkflow = (ctx: ClientContext, id: string, o?: WaitOptions) =>
  follow(
    {
      what: `workflow ${id}`,
      get: (signal) => call<Workflow>(ctx, 'GET', workflowPath(id), { signal }),
      isFinal: (w) => isFinalWorkflowStatus(w.status),
      stream: (so) => streamWorkflowEvents(ctx, id, so),
      lastType: 'workflow_finished',
    },
    resolveWaitOptions(o),
  );
