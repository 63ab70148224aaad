import type { AgentReachClient } from '@agent-reach/client';
import type { EvalFailure } from '@agent-reach/protocol';
import { DEFAULT_JUDGE_MIN_SCORE } from './constants.js';
import type { EvalCase, JudgeSpec } from './types.js';

/** The structured output a judge's run must give. */
export const JUDGE_OUTPUT_SCHEMA = {
  type: 'object',
  required: ['score', 'reason'],
  properties: {
    score: { type: 'number', minimum: 0, maximum: 1 },
    reason: { type: 'string' },
  },
  additionalProperties: false,
} as const;

/** What a judge's run is asked: the rubric, the request and the answer. */
export function judgeInput(c: EvalCase, rubric: string, answer: string): string {
  return [
    'Score the answer below against the rubric, from 0 (fails it) to 1 (meets it fully).',
    `Rubric:\n${rubric}`,
    `Request:\n${c.input}`,
    `Answer:\n${answer}`,
    'Reply with JSON: {"score": <0..1>, "reason": "<one sentence>"}.',
  ].join('\n\n');
}

/**
 * Asks a judge — an ordinary run of the judge's agent, through that agent's declared provider and model,
 * with a structured output — to score an answer against the rubric.
 */
export async function judgeAnswer(
  client: AgentReachClient,
  c: EvalCase,
  judge: JudgeSpec,
  answer: string,
  metadata: Record<string, string>,
): Promise<{ score: number; reason: string; failure?: EvalFailure }> {
  const minScore = judge.min_score ?? DEFAULT_JUDGE_MIN_SCORE;
  try {
    const run = await client.run<typeof JUDGE_OUTPUT_SCHEMA>({
      agent: judge.agent,
      input: judgeInput(c, judge.rubric, answer),
      outputSchema: JUDGE_OUTPUT_SCHEMA,
      metadata: { ...metadata, eval_role: 'judge' },
      ...(judge.model ? { model: judge.model } : {}),
    });
    const out = run.output as { score?: unknown; reason?: unknown } | undefined;
    if (run.status !== 'succeeded' || typeof out?.score !== 'number')
      return {
        score: 0,
        reason: '',
        failure: {
          check: 'judge',
          message: `the judge's run ${run.run_id} gave no score (${run.status}, ${run.reason ?? 'no reason'})`,
        },
      };
    const reason = typeof out.reason === 'string' ? out.reason : '';
    return out.score >= minScore
      ? { score: out.score, reason }
      : {
          score: out.score,
          reason,
          failure: { check: 'judge', message: `score ${out.score} below ${minScore}: ${reason}` },
        };
  } catch (err) {
    return {
      score: 0,
      reason: '',
      failure: { check: 'judge', message: `the judge failed: ${(err as Error).message}` },
    };
  }
}
