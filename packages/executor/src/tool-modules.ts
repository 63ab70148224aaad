import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { AgentReachError, type ToolDefinition } from '@agent-reach/protocol';
import type { ToolModuleDeps } from './executor.js';

/** A loaded tool module: a factory of tool definitions. */
export type ToolFactory = (deps: ToolModuleDeps) => ToolDefinition[];

/**
 * Loads user tool modules. Each default-exports `ToolDefinition[]` or `(deps) => ToolDefinition[]`;
 * anything else is a start-up error naming the file.
 */
export async function loadToolModules(files: readonly string[]): Promise<ToolFactory[]> {
  const factories: ToolFactory[] = [];
  for (const file of files) {
    let mod: { default?: unknown };
    try {
      mod = (await import(pathToFileURL(path.resolve(file)).href)) as { default?: unknown };
    } catch (err) {
      throw new AgentReachError(
        'TOOL_DEFINITION_INVALID',
        `${file}: cannot load tool module: ${(err as Error).message}`,
      );
    }
    const exported = mod.default;
    if (typeof exported === 'function') factories.push(exported as ToolFactory);
    else if (Array.isArray(exported)) factories.push(() => exported as ToolDefinition[]);
    else {
      throw new AgentReachError(
        'TOOL_DEFINITION_INVALID',
        `${file}: the default export must be ToolDefinition[] or a function returning them`,
      );
    }
  }
  return factories;
}
