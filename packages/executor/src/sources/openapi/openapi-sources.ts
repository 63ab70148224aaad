import type { AgentReachError } from '@agent-reach/protocol';
import { createAjv, type Logger, type ToolGroupLimits, type ToolRegistry } from '@agent-reach/shared';
import { loadOpenApiSource, type LoadedSource } from './openapi-source.js';

export interface OpenApiSourcesOptions {
  registry: ToolRegistry;
  logger: Logger;
  /** Where relative document paths start: the directory of the executor's agents file. */
  baseDir: string;
  /** The environment credentials are read from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Told each answer's HTTP status (`none`: no answer) of an OpenAPI tool's call. */
  onResponse?: (tool: string, status: number | 'none') => void;
}

/** What one source serves and what went wrong with it, as the last load left it. */
export interface OpenApiSourceStatus {
  readonly name: string;
  readonly group: string;
  readonly tools: readonly string[];
  readonly problems: readonly string[];
}

/** The OpenAPI sources of the configuration in force, registered as tools. */
export interface OpenApiSources {
  /**
   * Loads the sources the tool groups declare and swaps their tools into the registry (at once: a call
   * sees the old set or the new one). Applies run one after another; tool groups whose sources are as
   * last applied change nothing. Resolves whether the registry changed.
   */
  apply(toolGroups: Readonly<Record<string, ToolGroupLimits>> | undefined): Promise<boolean>;
  status(): readonly OpenApiSourceStatus[];
}

export function createOpenApiSources(options: OpenApiSourcesOptions): OpenApiSources {
  const { registry, logger } = options;
  const log = logger.child({ component: 'openapi' });
  const formats = new Set(Object.keys((createAjv() as unknown as { formats: object }).formats));
  let owned: string[] = [];
  let applied = JSON.stringify([]);
  let status: OpenApiSourceStatus[] = [];
  let queue: Promise<unknown> = Promise.resolve();

  const load = async (toolGroups: Readonly<Record<string, ToolGroupLimits>> | undefined) => {
    const declared = Object.entries(toolGroups ?? {}).flatMap(([group, spec]) =>
      (spec.openapi ?? []).map((source) => ({ group, source })),
    );
    const key = JSON.stringify(declared);
    if (key === applied) return false;
    const loaded: LoadedSource[] = await Promise.all(
      declared.map(({ group, source }) =>
        loadOpenApiSource(source, group, {
          baseDir: options.baseDir,
          env: options.env,
          formats,
          ...(options.onResponse ? { onResponse: options.onResponse } : {}),
        }),
      ),
    );
    // From here to the end nothing awaits: the old tools go and the new ones come in one step.
    for (const name of owned) registry.unregister(name);
    owned = [];
    status = loaded.map((source) => {
      const tools: string[] = [];
      const problems = [...source.problems];
      for (const tool of source.tools) {
        try {
          registry.register(tool);
          tools.push(tool.name);
        } catch (err) {
          const e = err as AgentReachError;
          const why =
            e.code === 'TOOL_DUPLICATE'
              ? `tool "${tool.name}" is already registered by a tool module; the operation is left out`
              : e.message;
          problems.push(`openapi source "${source.name}" (tool group "${source.group}"): ${why}`);
        }
      }
      owned.push(...tools);
      for (const problem of problems) log.error({ source: source.name, problem }, 'openapi source problem');
      return { name: source.name, group: source.group, tools, problems };
    });
    applied = key;
    void reportValidation(loaded, key);
    log.info(
      { sources: status.map((s) => ({ name: s.name, tools: s.tools.length, problems: s.problems.length })) },
      'openapi sources loaded',
    );
    return true;
  };

  /** Adds each document's validation problems to its source's status once known, and logs them. */
  const reportValidation = async (loaded: readonly LoadedSource[], key: string) => {
    const found = await Promise.all(loaded.map((source) => source.validation));
    // A later apply replaced these sources: their problems are its to report.
    if (applied !== key) return;
    status = status.map((s, i) => ({ ...s, problems: [...s.problems, ...(found[i] ?? [])] }));
    loaded.forEach((source, i) => {
      for (const problem of found[i] ?? [])
        log.error({ source: source.name, problem }, 'openapi source problem');
    });
  };

  return {
    apply(toolGroups) {
      const next = queue.then(() => load(toolGroups));
      queue = next.catch(() => undefined);
      return next;
    },
    status: () => status,
  };
}
