import { createHash } from 'node:crypto';
import type { GuardrailStage } from '@agent-reach/protocol';
import { guardrailCheck, piiDetectors, type GuardrailSpec } from '@agent-reach/shared';
import { describePii, findPii, foldTerms, foldText } from './pii-detectors.js';

/** One guardrail's verdict on one thing it looked at, as the run's state keeps it. */
export interface GuardrailVerdict {
  /** `error`: the check failed or timed out (its `on_error` decided what happened). */
  verdict: 'passed' | 'tripped' | 'error';
  reason: string;
  /** Epoch ms it was decided. */
  at: number;
  /** An `agent` check: the model that answered (`provider/model`, or the model's name unrouted). */
  model?: string;
  /** An `agent` check: its answer's cost, when that model has a price. */
  cost?: number;
}

/** What a guardrail looks at: the stage, the text, and the call when it is a tool call's. */
export interface GuardTarget {
  stage: GuardrailStage;
  /** The text as the model wrote it or will read it (JSON for arguments and results). */
  text: string;
  /** Identifies the thing checked within the run (the call id, the turn of an answer). */
  ref: string;
  tool?: string;
  toolCallId?: string;
}

/** The key of a verdict in the run's state: one guardrail, one stage, one thing checked. */
export function verdictKey(spec: Pick<GuardrailSpec, 'name'>, target: GuardTarget): string {
  return `${target.stage}:${spec.name}:${target.ref}`;
}

/** The id of a guardrail's tool call: derived from its verdict key, so a resumed run finds its result. */
export function guardrailCallId(key: string): string {
  return `grd_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/**
 * What the checks read of a target: for JSON (arguments, results) every key and string or number in it,
 * decoded (an `\u0040` escape is an `@`), else the text; then folded (NFKC, no zero-width characters).
 */
export function checkedText(text: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return foldText(text);
  }
  if (typeof parsed !== 'object' || parsed === null) return foldText(text);
  const leaves: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') leaves.push(v);
    else if (typeof v === 'number' || typeof v === 'bigint') leaves.push(String(v));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        leaves.push(k);
        walk(x);
      }
  };
  walk(parsed);
  return foldText(leaves.join('\n'));
}

/** The verdict of a built-in check (`max_length`, `blocked_terms`, `regex`, `pii`) on a target. */
export function builtinVerdict(
  spec: GuardrailSpec,
  target: GuardTarget,
): { tripped: boolean; reason: string } {
  const where =
    target.stage === 'arguments' || target.stage === 'result'
      ? `the call's ${target.stage}`
      : `the ${target.stage}`;
  // "the call's arguments hold", "the input holds".
  const v = (singular: string, plural: string) => (target.stage === 'arguments' ? plural : singular);
  switch (guardrailCheck(spec)) {
    case 'max_length': {
      const max = spec.max_length ?? Infinity;
      const n = [...target.text].length;
      return n > max
        ? {
            tripped: true,
            reason: `${where} ${v('is', 'are')} ${n} characters long, over the limit of ${max}`,
          }
        : { tripped: false, reason: `${n} of ${max} characters` };
    }
    case 'blocked_terms': {
      const text = foldTerms(checkedText(target.text));
      const hit = (spec.blocked_terms ?? []).find((t) => text.includes(foldTerms(t)));
      return hit
        ? { tripped: true, reason: `${where} ${v('holds', 'hold')} the blocked term "${hit}"` }
        : { tripped: false, reason: 'no blocked term' };
    }
    case 'regex': {
      const r = spec.regex;
      const re = new RegExp(
        typeof r === 'string' ? r : (r?.pattern ?? ''),
        typeof r === 'object' ? r.flags : undefined,
      );
      const m = re.exec(checkedText(target.text));
      return m
        ? {
            tripped: true,
            reason: `${where} ${v('matches', 'match')} /${re.source}/ (${m[0].length} characters at ${m.index})`,
          }
        : { tripped: false, reason: 'no match' };
    }
    case 'pii': {
      const found = findPii(checkedText(target.text), piiDetectors(spec));
      return found.length > 0
        ? { tripped: true, reason: `${where} ${v('holds', 'hold')} PII: ${describePii(found)}` }
        : { tripped: false, reason: 'no PII found' };
    }
    default:
      throw new Error(`guardrail "${spec.name}" is not a built-in check`);
  }
}
