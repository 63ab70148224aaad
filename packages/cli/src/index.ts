export { openContext, openRunner } from './context.js';
export type { CliContext } from './context.js';
export { startDev } from './dev.js';
export type { DevStack, DevOptions } from './dev.js';
