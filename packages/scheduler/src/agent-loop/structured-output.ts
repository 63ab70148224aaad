import {
  checkOutput,
  responseFormatFor,
  type JsonSchemaResponseFormat,
  type OutputProblem,
} from '@agent-reach/shared';
import type { RunContext } from './run-context.js';
import type { NextStep } from './steps.js';

/** The `response_format` of a run's model turns: its output schema, when it declares one. */
export function turnFormat(run: RunContext): JsonSchemaResponseFormat | undefined {
  const schema = run.state.outputSchema;
  return schema ? responseFormatFor(schema, `${run.state.agent}_output`) : undefined;
}

/**
 * A final answer of a run with an output schema: valid, the run succeeds with the parsed JSON as its
 * `output`; invalid, the model is told each problem (field, constraint, expected) and asked again, up to
 * the run's `outputRetries`, then the run fails `invalid_output` keeping the last answer. The answer is
 * already in the history as the assistant's message.
 */
export function structuredAnswer(run: RunContext, text: string, turn: number, truncated: boolean): NextStep {
  const { state, limits } = run;
  const schema = state.outputSchema;
  if (!schema) return { type: 'final_output', answer: text, truncated };
  const check = checkOutput(text, schema);
  if (check.ok) return { type: 'final_output', answer: check.json, truncated, output: check.output };
  const used = (state.outputRetries ?? 0) + 1;
  const problems = check.problems.map(({ field, constraint, expected, message }) => ({
    field,
    constraint,
    expected,
    message,
  }));
  run.emit({
    type: 'output_invalid',
    turn,
    problems,
    retries_left: Math.max(0, limits.outputRetries - used),
  });
  if (used > limits.outputRetries) {
    return {
      type: 'fail',
      reason: 'invalid_output',
      answer: text,
      report: `the answer does not match the output schema after ${limits.outputRetries} ${limits.outputRetries === 1 ? 'retry' : 'retries'}: ${describe(check.problems)}`,
    };
  }
  state.outputRetries = used;
  state.messages.push({ role: 'user', content: retryMessage(problems) });
  return { type: 'run_again' };
}

/** What the model reads after an answer that missed the schema: the problems as JSON, and what to do. */
function retryMessage(problems: Array<Omit<OutputProblem, 'example'>>): string {
  return (
    'Your answer does not match the required output schema. Answer again with only the corrected JSON ' +
    `value, nothing else. Problems: ${JSON.stringify({ error: { kind: 'invalid_output', problems } })}`
  );
}

function describe(problems: readonly OutputProblem[]): string {
  return problems
    .map((p) => `${p.field} ${p.message} (${p.constraint}; expected ${p.expected})`)
    .join('; ')
    .slice(0, 2000);
}
