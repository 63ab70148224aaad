export { openContext, openRunner } from './context.js';
export type { CliContext } from './context.js';
