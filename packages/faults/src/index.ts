export {
  faultScenarioChain,
  prepareFaultScenario,
  runFaultScenario,
  type FaultReport,
  type FaultRunOptions,
  type PreparedFaultScenario,
} from './run-scenario.js';
export {
  ARCHIVE_SCENARIOS,
  BASELINE,
  outOfMemory,
  SCENARIOS,
  type ClusterTarget,
  type FaultContext,
  type FaultScenario,
  type ScenarioAttachment,
} from './scenarios.js';
export { callbackReceiverKilled, checkDeliveries, CALLBACK_FAULT_ENV } from './callback-check.js';
export { checkFirings, scheduleSchedulerKilled, FAULT_SCHEDULE_EVERY_MS } from './schedule-check.js';
export { formatReport } from './report.js';
export { cleanupAll, Fleet, type Role } from './fleet.js';
export {
  FAULT_AGENT,
  FAULT_AGENTS_FILE,
  FAULT_ENV,
  FAULT_TOOLS_MODULE,
  faultModelScenarios,
  MCP_FAULT_TOOL,
  TOOL_CALLS_PER_RUN,
} from './workload.js';
export {
  checkCallOutcomes,
  checkRuns,
  countViolatingRuns,
  countViolations,
  FINAL_STATUSES,
  historyProblems,
  INVARIANTS,
  readStarts,
  runInput,
  runOfRequest,
  type CallOutcomes,
  type Invariant,
  type ModelRequest,
  type Violation,
} from './fault-check.js';
export {
  checkArchive,
  createFaultArchive,
  DEFAULT_POSTGRES_URL,
  type FaultArchive,
} from './archive-check.js';
export { stallFigures, stallReport, type StallFigures } from './stall.js';
export { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';
