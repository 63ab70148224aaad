import type { Registry } from 'prom-client';
import type { Keys } from '@agent-reach/protocol';
import {
  BREAKER_STATE_VALUE,
  DEFAULT_PROVIDER,
  liveAnnouncements,
  MCP_NAME_SEPARATOR,
  METRIC_PREFIX,
  redisTimeMs,
  type AgentsFile,
  type RedisClient,
} from '@agent-reach/shared';

/** The gauge each model provider's breaker sets in this scheduler (model/provider-metrics.ts). */
const PROVIDER_BREAKER_METRIC = `${METRIC_PREFIX}llm_provider_breaker_state`;

type BreakerName = keyof typeof BREAKER_STATE_VALUE;
const STATE_OF_VALUE = new Map(
  Object.entries(BREAKER_STATE_VALUE).map(([name, value]) => [value as number, name as BreakerName]),
);

/** A model provider's breaker as this scheduler holds it. */
export interface ProviderBreaker {
  provider: string;
  state: BreakerName;
}

/**
 * The breakers of the model providers, read from this scheduler's own gauge
 * (`agent_reach_llm_provider_breaker_state`): each scheduler keeps its own, and the API serves the one
 * of the process it runs in. Without a registry, or before the providers registered it, none.
 */
export async function providerBreakers(registry: Registry | undefined): Promise<ProviderBreaker[]> {
  const metric = registry?.getSingleMetric(PROVIDER_BREAKER_METRIC);
  if (!metric) return [];
  const { values } = await metric.get();
  return values
    .flatMap((v) => {
      const provider = v.labels.provider;
      const state = STATE_OF_VALUE.get(v.value);
      return typeof provider === 'string' && state ? [{ provider, state }] : [];
    })
    .sort((a, b) => (a.provider < b.provider ? -1 : 1));
}

/** An MCP server as the fleet reports it: one row per server, its executors' reports merged. */
export interface McpServerView {
  name: string;
  group: string;
  /** Executors that report the server connected, and all that mount it. */
  up: number;
  executors: number;
  /** Most tools one executor mounts from it. */
  tools: number;
  /** The latest error an executor gives for it while down. */
  error?: string;
  /** Whatever else the executors report of it (state, since, restarts, …), the newest report's. */
  [field: string]: unknown;
}

/**
 * The MCP servers the live executors announce in the fleet catalog, by name. Fields an executor adds to
 * its report beyond name, group, up, tools and error are passed on as they are (the newest report's).
 */
export async function mcpServers(redis: RedisClient, keys: Keys): Promise<McpServerView[]> {
  const replies = await redis.pipeline().time().hgetall(keys.catalog).exec();
  const [time, raw] = (replies ?? []).map(([err, value]) => {
    if (err) throw err;
    return value;
  }) as [[string, string], Record<string, string>];
  const servers = new Map<string, McpServerView>();
  // Oldest first: the newest report of a server gives its extra fields and its error.
  for (const a of liveAnnouncements(raw ?? {}, redisTimeMs(time))) {
    for (const s of Array.isArray(a.mcpServers) ? a.mcpServers : []) {
      if (typeof s?.name !== 'string') continue;
      const known = servers.get(s.name);
      const { name, group, up, tools, error, ...rest } = s as typeof s & Record<string, unknown>;
      const view: McpServerView = {
        ...known,
        ...rest,
        name,
        group: typeof group === 'string' ? group : (known?.group ?? ''),
        up: (known?.up ?? 0) + (up === true ? 1 : 0),
        executors: (known?.executors ?? 0) + 1,
        tools: Math.max(known?.tools ?? 0, typeof tools === 'number' ? tools : 0),
      };
      if (up !== true && typeof error === 'string') view.error = error;
      servers.set(name, view);
    }
  }
  return [...servers.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** The providers a key limited to some agents sees: those its agents' models and fallbacks name. */
export function visibleProviders(agents: AgentsFile, allowed: ReadonlySet<string>): Set<string> {
  const providers = new Set<string>();
  for (const a of agents.agents.values()) {
    if (!allowed.has(a.name)) continue;
    const models = [a.model, ...(a.fallback ?? [])];
    for (const m of models) {
      const slash = m?.indexOf('/') ?? -1;
      providers.add(m !== undefined && slash > 0 ? m.slice(0, slash) : DEFAULT_PROVIDER);
    }
  }
  return providers;
}

/** Whether a key limited to some agents may see an MCP server: one of its agents has a tool of it. */
export function visibleServer(agents: AgentsFile, allowed: ReadonlySet<string>, server: string): boolean {
  const prefix = `${server}${MCP_NAME_SEPARATOR}`;
  for (const a of agents.agents.values())
    if (allowed.has(a.name) && a.tools.some((t) => t.startsWith(prefix))) return true;
  return false;
}
