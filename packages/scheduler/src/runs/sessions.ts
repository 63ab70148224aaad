import type { Redis } from 'ioredis';
import { constants, type Keys } from '@agent-reach/shared';
import type { ChatMessage, CompactionSummary, RunState, TaskStep } from '../agent-loop/run-state.js';

/** What the runs of one session share. */
export interface SessionMemory {
  sessionId: string;
  messages: ChatMessage[];
  summary?: CompactionSummary;
  steps: TaskStep[];
  runs: string[];
  updatedAt: number;
}

/**
 * Session memory: history, compacted summary and task stack, carried from one run of a session to the
 * next. Written when a run ends; the last run to end wins if a session's runs overlap.
 */
export class SessionStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly retentionS: number = constants.DEFAULT_RUN_RETENTION_S,
  ) {}

  async load(sessionId: string): Promise<SessionMemory | undefined> {
    const raw = await this.redis.get(this.keys.session(sessionId));
    return raw ? (JSON.parse(raw) as SessionMemory) : undefined;
  }

  async create(sessionId: string): Promise<boolean> {
    const memory: SessionMemory = { sessionId, messages: [], steps: [], runs: [], updatedAt: Date.now() };
    const set = await this.redis.set(
      this.keys.session(sessionId),
      JSON.stringify(memory),
      'EX',
      this.retentionS,
      'NX',
    );
    return set === 'OK';
  }

  async saveFrom(state: RunState): Promise<void> {
    if (!state.sessionId) return;
    const previous = await this.load(state.sessionId);
    const memory: SessionMemory = {
      sessionId: state.sessionId,
      messages: state.messages,
      ...(state.summary ? { summary: state.summary } : {}),
      steps: state.plan.steps,
      runs: [...(previous?.runs ?? []), state.runId].slice(-100),
      updatedAt: Date.now(),
    };
    await this.redis.set(this.keys.session(state.sessionId), JSON.stringify(memory), 'EX', this.retentionS);
  }
}
