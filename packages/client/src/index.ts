export { createClient } from './client.js';
export type {
  AgentReachClient,
  ClientOptions,
  CreateRunInput,
  ListRunsFilter,
  StreamOptions,
  WaitOptions,
  DecisionOptions,
  CreateWorkflowInput,
  ListWorkflowsFilter,
} from './client-api.js';
export { AgentReachApiError, API_ERROR_CODES } from './errors.js';
export type { ApiErrorCode, ClientErrorCode } from './errors.js';
export { parseSse } from './sse.js';
export type { SseMessage } from './sse.js';
export {
  FINAL_STATUSES,
  isFinalStatus,
  FINAL_WORKFLOW_STATUSES,
  isFinalWorkflowStatus,
} from '@agent-reach/protocol';
export type {
  OutputOf,
  Run,
  RunSummary,
  RunList,
  RunStatus,
  RunStep,
  ToolResult,
  ModelTurn,
  Usage,
  PendingApproval,
  Decision,
  Agent,
  AgentTool,
  RunEventType,
  RunEventData,
  StreamedAnswerDelta,
  StreamedEvent,
  Workflow,
  WorkflowSummary,
  WorkflowList,
  WorkflowNode,
  WorkflowWait,
  WorkflowStatus,
  WorkflowEventType,
  StreamedWorkflowEvent,
} from './types.js';
export {
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  WEBHOOK_SECRET_PREFIX,
  WEBHOOK_TOLERANCE_S,
} from './webhooks.js';
export type { CallbackEvent, WebhookErrorCode, WebhookHeaders } from './webhooks.js';
