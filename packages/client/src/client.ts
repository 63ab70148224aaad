import { resolveClientOptions } from './options.js';
import { call, clientContext } from './request.js';
import { createRun, decide, listRuns, runPath, streamEvents, waitForRun } from './runs.js';
import { createSession, sendMessage } from './sessions.js';
import type { Agent, Run, Workflow } from './types.js';
import type { AgentReachClient, ClientOptions, StreamOptions } from './client-api.js';
import {
  createWorkflow,
  listWorkflows,
  streamWorkflowEvents,
  waitForWorkflow,
  workflowPath,
} from './workflows.js';

/** A typed client of the Agent-Reach HTTP API. Error answers reject with `AgentReachApiError`. */
export function createClient(options: ClientOptions): AgentReachClient {
  const ctx = clientContext(resolveClientOptions(options));
  return {
    createRun: (i) => createRun(ctx, i),
    run: async (i, o) => waitForRun(ctx, (await createRun(ctx, i)).run_id, o),
    getRun: <O>(id: string) => call<Run<O>>(ctx, 'GET', runPath(id)),
    listRuns: (f) => listRuns(ctx, f),
    waitForRun: (runId, o) => waitForRun(ctx, runId, o),
    streamEvents: ((runId: string, o?: StreamOptions) =>
      streamEvents(ctx, runId, o)) as AgentReachClient['streamEvents'],
    approve: (runId, toolCallId, o) => decide(ctx, runId, toolCallId, 'approve', o),
    reject: (runId, toolCallId, o) => decide(ctx, runId, toolCallId, 'reject', o),
    cancel: (runId) => call<Run>(ctx, 'POST', `${runPath(runId)}/cancel`),
    createSession: (sessionId) => createSession(ctx, sessionId),
    sendMessage: (sessionId, i) => sendMessage(ctx, sessionId, i),
    listAgents: async () => (await call<{ agents: Agent[] }>(ctx, 'GET', '/v1/agents')).agents,
    createWorkflow: (i) => createWorkflow(ctx, i),
    getWorkflow: (id) => call<Workflow>(ctx, 'GET', workflowPath(id)),
    listWorkflows: (f) => listWorkflows(ctx, f),
    streamWorkflowEvents: (id, o) => streamWorkflowEvents(ctx, id, o),
    waitForWorkflow: (id, o) => waitForWorkflow(ctx, id, o),
    cancelWorkflow: (id) => call<Workflow>(ctx, 'POST', `${workflowPath(id)}/cancel`),
  };
}
