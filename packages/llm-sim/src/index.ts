export { startLlmSim } from './server.js';
export type { LlmSim, LlmSimOptions } from './server.js';
export { loadScenarios, loadScenarioFile } from './load-scenarios.js';
export { validateScenario, ScenarioValidationError } from './scenario-validation.js';
export type { ScenarioProblem } from './scenario-validation.js';
export { validateChatRequest } from './request-validation.js';
export {
  SCENARIO_HEADER,
  CONVERSATION_HEADER,
  FINAL_CONTENT,
  BUNDLED_SCENARIOS_DIR,
  NOISY_DEFAULT_RATES,
  NOISY_MODEL,
} from './constants.js';
export type {
  Scenario,
  ScenarioTurn,
  ScriptedToolCall,
  ScriptedFinishReason,
  RandomAnswers,
  NoisyModel,
  NoisyRates,
  NoisyMistake,
  NoisyMistakeKind,
  Fault,
  FaultType,
  RateLimitFault,
  ServerErrorFault,
  ConnectionResetFault,
  HangFault,
  LatencyFault,
  MalformedArgumentsFault,
  OversizedContentFault,
  StreamFault,
  Noise,
  AppliedFault,
  RecordedRequest,
} from './types.js';
