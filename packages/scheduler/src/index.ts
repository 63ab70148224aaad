export { Dispatcher } from './dispatcher.js';
export type { DispatchCall, DispatchRun, DispatcherOptions } from './dispatcher.js';
export { ToolCatalog } from './tool-catalog.js';
