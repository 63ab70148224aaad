export type { RunEvent, RunEventBody } from '@agent-reach/protocol';

/** What the loop just did, for checkpointing. */
export type StepKind =
  'started' | 'plan' | 'llm_response' | 'tool_results' | 'compaction' | 'handoff' | 'parked' | 'finished';
