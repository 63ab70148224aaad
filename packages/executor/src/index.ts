export { startExecutor } from './executor.js';
export type { ExecutorProcess, ToolModuleDeps } from './executor.js';
export { createToolWorker } from './tool-worker.js';
export type { ToolWorker, ToolWorkerOptions } from './tool-worker.js';
export { runTool } from './run-tool.js';
export type { RunToolDeps, ToolOutcome } from './run-tool.js';
export { BreakerBoard } from './breakers.js';
export type { BreakerSnapshot, BreakerState, BreakerOptions } from './breakers.js';
export { shapeResult } from './result-shaping.js';
export {
  createDemoTools,
  queryWeather,
  queryOrderStatus,
  createWriteMarkdownFile,
  createGetFullResult,
} from './tools/index.js';
export { resolveInside } from './tools/write-markdown-file.js';
export { loadToolModules } from './tool-modules.js';
export type { ToolFactory } from './tool-modules.js';
export { McpSource } from './sources/mcp-source.js';
export type { McpSourceOptions } from './sources/mcp-source.js';
export { probeMcpServer } from './sources/mcp-probe.js';
export type { McpProbeOutcome } from './sources/mcp-probe.js';
export { toModelResult, toolDigest } from './sources/mcp-tools.js';
export type { McpContentItem } from './sources/mcp-tools.js';
export { loadOpenApiSource } from './sources/openapi/openapi-source.js';
export type { LoadedSource, SourceLoadOptions } from './sources/openapi/openapi-source.js';
