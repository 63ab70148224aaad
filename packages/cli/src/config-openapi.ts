import { dirname } from 'node:path';
import { loadOpenApiSource } from '@agent-reach/executor';
import { createAjv, ToolRegistry, type OpenApiSourceSpec } from '@agent-reach/shared';

/**
 * The OpenAPI sources of an agents file, checked as an executor would load them: each document read and
 * validated as OpenAPI (`@readme/openapi-parser`), each entry of `operations` looked up in it (an
 * unknown one with the closest operation of the document), each operation made into a tool and its
 * schema compiled. Documents in files are always read; documents at http(s) URLs only with `probe`.
 * Credentials are not read: the executor's environment is not this one. Returns the problems found.
 */
export async function checkOpenApiSources(
  document: unknown,
  file: string,
  env: Record<string, string | undefined>,
  options: { probe: boolean; print: (line: string) => void },
): Promise<string[]> {
  const problems: string[] = [];
  const sources = openApiSourcesOf(document);
  if (sources.length === 0) return problems;
  const formats = new Set(Object.keys((createAjv() as unknown as { formats: object }).formats));
  const loaded = await Promise.all(
    sources.map(async ({ group, spec }) => {
      if (/^https?:\/\//i.test(spec.document) && !options.probe) return { group, spec, source: undefined };
      const source = await loadOpenApiSource(spec, group, {
        baseDir: dirname(file),
        env,
        formats,
        checkOnly: true,
      });
      return { group, spec, source };
    }),
  );
  for (const { spec, source } of loaded) {
    if (!source) {
      options.print(
        `openapi source ${spec.name}: document ${spec.document} not read (config check --probe reads URLs)`,
      );
      continue;
    }
    problems.push(...[...source.problems, ...(await source.validation)].map((p) => `${file}: ${p}`));
    // The executor compiles each tool's schema when it registers it: a schema that does not compile is
    // an operation left out.
    const registry = new ToolRegistry();
    const served: string[] = [];
    for (const tool of source.tools) {
      try {
        registry.register(tool);
        served.push(tool.name);
      } catch (err) {
        problems.push(
          `${file}: openapi source "${spec.name}": tool "${tool.name}" cannot be registered: ${(err as Error).message}`,
        );
      }
    }
    options.print(`openapi source ${spec.name}: ${served.length} tool(s) (${served.join(', ')})`);
  }
  return problems;
}

/** The OpenAPI sources a (possibly malformed) agents document declares, with their tool group. */
function openApiSourcesOf(document: unknown): Array<{ group: string; spec: OpenApiSourceSpec }> {
  const groups = (document as { tool_groups?: unknown } | null)?.tool_groups;
  if (typeof groups !== 'object' || groups === null) return [];
  return Object.entries(groups).flatMap(([group, limits]) => {
    const list = (limits as { openapi?: unknown } | null)?.openapi;
    if (!Array.isArray(list)) return [];
    return list
      .filter(
        (s): s is OpenApiSourceSpec =>
          typeof s?.name === 'string' && typeof s.document === 'string' && Array.isArray(s.operations),
      )
      .map((spec) => ({ group, spec }));
  });
}
