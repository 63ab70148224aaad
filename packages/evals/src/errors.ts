/**
 * Bad input to an eval (a dataset that does not validate, a variant that cannot be read, a flag out of
 * range, a request the platform refuses as malformed): exit code 2, every problem named.
 */
export class EvalInputError extends Error {
  readonly code = 'EVAL_INPUT_INVALID';
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'EvalInputError';
    this.problems = problems;
  }
}

/** The eval was stopped (SIGINT, SIGTERM, an aborted signal): the runs it had in flight were cancelled. */
export class EvalInterrupted extends Error {
  readonly code = 'EVAL_INTERRUPTED';
  constructor(readonly cancelled: number) {
    super(`interrupted: ${cancelled} run(s) in flight cancelled`);
    this.name = 'EvalInterrupted';
  }
}
