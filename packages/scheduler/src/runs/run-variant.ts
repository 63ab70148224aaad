import type { RunVariant, VariantOverrides, VariantToolOverride } from '@agent-reach/protocol';
import {
  checkArguments,
  createAjv,
  createLenientAjv,
  foldAliases,
  variantAgent,
  withRunAliases,
  type AgentSpec,
  type ArgumentsCheck,
  type ToolCatalogEntry,
} from '@agent-reach/shared';
import type { ValidateFunction } from 'ajv';
import type { AgentLoopDeps, LoopLimits } from '../agent-loop/loop-options.js';
import type { ToolCatalog } from '../fleet/tool-catalog.js';

/**
 * A run's variant where the runner builds the loop's dependencies: the agent merged with the overrides,
 * the variant's loop settings as limits, the tools as the variant describes them to the model, and its
 * aliases on the run's tool-call jobs. The loop sees an ordinary agent, catalog and dispatcher.
 */

/**
 * A view of the agent in force with the overrides over it, made again only when the agent changes. Only
 * the run's own agent (`name`) takes them: another agent in charge of the run (a handoff) is as it is.
 */
export function variantAgentView(
  name: string,
  overrides: VariantOverrides | undefined,
): (agent: AgentSpec) => AgentSpec {
  let base: AgentSpec | undefined;
  let merged: AgentSpec | undefined;
  return (agent) => {
    if (!overrides || agent.name !== name) return agent;
    if (agent !== base || merged === undefined) {
      base = agent;
      merged = variantAgent(agent, overrides);
    }
    return merged;
  };
}

/** A run's limits with the variant's settings that are not agent fields (planning); the run's own win. */
export function variantLimits(
  overrides: VariantOverrides | undefined,
  run: Partial<LoopLimits> = {},
): Partial<LoopLimits> {
  return { ...(overrides?.planning === undefined ? {} : { planning: overrides.planning }), ...run };
}

/** The catalog and dispatcher of a run of `variant` (none to replace when it changes no tool). */
export function variantDeps(
  variant: RunVariant | undefined,
  catalog: ToolCatalog,
  dispatcher: AgentLoopDeps['dispatcher'],
): Partial<Pick<AgentLoopDeps, 'catalog' | 'dispatcher'>> {
  const tools = variant?.overrides.tools;
  if (!tools || Object.keys(tools).length === 0) return {};
  const overrides = new Map(Object.entries(tools));
  const aliases = Object.fromEntries(
    [...overrides].flatMap(([tool, o]) => (o.aliases ? [[tool, o.aliases]] : [])),
  ) as Record<string, Record<string, Record<string, string>>>;
  return {
    catalog: variantCatalog(catalog, overrides),
    dispatcher: {
      dispatch: (run, calls, options) =>
        dispatcher.dispatch({ ...run, argumentAliases: aliases }, calls, options),
      ...(dispatcher.recordLocal
        ? { recordLocal: dispatcher.recordLocal.bind(dispatcher) as typeof dispatcher.recordLocal }
        : {}),
    },
  };
}

/**
 * The catalog as a run of a variant sees it: each overridden tool's entry with the variant's description,
 * its examples in the tool's parameters (JSON Schema `examples`, which the model reads) and the variant's
 * aliases beside the tool's; arguments checked (before a person is asked) with those aliases. Everything
 * else is the shared catalog's.
 */
function variantCatalog(catalog: ToolCatalog, overrides: Map<string, VariantToolOverride>): ToolCatalog {
  const views = new WeakMap<ToolCatalogEntry, ToolCatalogEntry>();
  const validators = new WeakMap<ToolCatalogEntry, ValidateFunction>();
  const ajv = { strict: createAjv(), lenient: createLenientAjv() };
  const entryOf = (name: string): ToolCatalogEntry | undefined => {
    const entry = catalog.get(name);
    const override = overrides.get(name);
    if (!entry || !override) return entry;
    let view = views.get(entry);
    if (!view) views.set(entry, (view = toolView(entry, override)));
    return view;
  };
  const check = (name: string, raw: string): ArgumentsCheck => {
    const entry = catalog.get(name);
    const override = overrides.get(name);
    if (!entry || !override?.aliases) return catalog.checkArguments(name, raw);
    let validate = validators.get(entry);
    if (!validate) {
      validate = (entry.origin ? ajv.lenient : ajv.strict).compile(entry.parameters);
      validators.set(entry, validate);
    }
    const folded = withRunAliases(foldAliases(entry.argumentAliases), override.aliases);
    return checkArguments(name, raw, validate, entry.parameters, folded);
  };
  return new Proxy(catalog, {
    get(target, prop) {
      if (prop === 'get') return entryOf;
      if (prop === 'checkArguments') return check;
      const value: unknown = Reflect.get(target, prop, target);
      // The catalog's methods read its private fields: they run on the catalog itself.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** One tool's entry as a variant shows it. */
function toolView(entry: ToolCatalogEntry, override: VariantToolOverride): ToolCatalogEntry {
  const aliases = override.aliases
    ? withRunAliases(foldAliases(entry.argumentAliases), override.aliases)
    : undefined;
  return {
    ...entry,
    ...(override.description ? { description: override.description } : {}),
    ...(override.examples ? { parameters: { ...entry.parameters, examples: override.examples } } : {}),
    ...(aliases
      ? {
          argumentAliases: Object.fromEntries(
            [...aliases].map(([field, table]) => [field, Object.fromEntries(table)]),
          ),
        }
      : {}),
  };
}
