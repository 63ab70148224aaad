import { NAME_PATTERN, RUN_ID_PATTERN, TOOL_CALL_ID_PATTERN } from './ids.js';

/**
 * What a child run (an agent called as a tool) carries of its parent: the run and the call it answers,
 * its depth in the tree of calls (the root run is 0, its children 1) and the tree's depth limit.
 */
export interface ParentLink {
  run_id: string;
  call_id: string;
  /** The parent's tool the call named (`ask_<agent>` or the declared name). */
  tool: string;
  depth: number;
  max_depth: number;
  /** Epoch ms the parent's deadline falls at: the child's own deadline is never later. */
  deadline_at: number;
}

/** JSON Schema of {@link ParentLink} in a run's job. */
export const PARENT_LINK_SCHEMA = {
  type: 'object',
  required: ['run_id', 'call_id', 'tool', 'depth', 'max_depth', 'deadline_at'],
  additionalProperties: false,
  properties: {
    run_id: { type: 'string', pattern: RUN_ID_PATTERN.source },
    call_id: { type: 'string', pattern: TOOL_CALL_ID_PATTERN.source },
    tool: { type: 'string', pattern: NAME_PATTERN.source },
    depth: { type: 'integer', minimum: 1, maximum: 100 },
    max_depth: { type: 'integer', minimum: 1, maximum: 100 },
    deadline_at: { type: 'integer', minimum: 0 },
  },
} as const;
