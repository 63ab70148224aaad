import type { Keys } from '@agent-reach/protocol';
import {
  closestName,
  constants,
  MCP_NAME_SEPARATOR,
  type AgentsFile,
  type Logger,
  type McpServerSpec,
  type McpServerState,
  type McpServerStatus,
  type Metrics,
  type MountedMcpServer,
  type SourcesReport,
  type RedisClient,
  type ToolRegistry,
  type WithdrawnTool,
} from '@agent-reach/shared';
import { McpConnection, type McpConnectionLimits } from './mcp-connection.js';
import { checkPins, type PinCandidate } from './mcp-pins.js';
import {
  callError,
  mcpToolDefinition,
  platformName,
  toolDigest,
  unmountable,
  type ListedMcpTool,
  type McpCall,
} from './mcp-tools.js';

/** Limits of the MCP servers an executor mounts; all optional. */
export interface McpSourceOptions {
  /** How long a server may take to answer `initialize` and `tools/list`, in ms. Default MCP_INITIALIZE_TIMEOUT_MS (10 000). */
  initializeTimeoutMs?: number;
  /** How often a connected server is pinged, in ms. Default MCP_PING_INTERVAL_MS (5000). */
  pingIntervalMs?: number;
  /** How long a ping may take before the server counts as hung, in ms. Default MCP_PING_TIMEOUT_MS (5000). */
  pingTimeoutMs?: number;
  /** First restart wait, doubled at each failure, in ms. Default MCP_RESTART_BACKOFF_MS (250). */
  restartBackoffMs?: number;
  /** Longest restart wait, in ms. Default MCP_RESTART_BACKOFF_MAX_MS (30 000). */
  restartBackoffMaxMs?: number;
  /** Largest message a server may send, in bytes. Default MCP_MAX_MESSAGE_BYTES (8 MiB). */
  maxMessageBytes?: number;
}

/** {@link McpSourceOptions} with every default filled in: the limits of each server's connection. */
export type ResolvedMcpSourceOptions = McpConnectionLimits;

export function resolveMcpSourceOptions(o: McpSourceOptions = {}): ResolvedMcpSourceOptions {
  return {
    initializeTimeoutMs: o.initializeTimeoutMs ?? constants.MCP_INITIALIZE_TIMEOUT_MS,
    pingIntervalMs: o.pingIntervalMs ?? constants.MCP_PING_INTERVAL_MS,
    pingTimeoutMs: o.pingTimeoutMs ?? constants.MCP_PING_TIMEOUT_MS,
    restartBackoffMs: o.restartBackoffMs ?? constants.MCP_RESTART_BACKOFF_MS,
    restartBackoffMaxMs: o.restartBackoffMaxMs ?? constants.MCP_RESTART_BACKOFF_MAX_MS,
    maxMessageBytes: o.maxMessageBytes ?? constants.MCP_MAX_MESSAGE_BYTES,
  };
}

export interface McpSourceDeps {
  registry: ToolRegistry;
  /** Groups this executor serves: only their servers are started here. */
  groups: readonly string[];
  /** The executor's environment, for `${VAR}` in a server's `env` and for `headers_from_env`. */
  env: Readonly<Record<string, string | undefined>>;
  redis: RedisClient;
  keys: Keys;
  logger: Logger;
  metrics: Metrics;
  /** The agents in force: a name an agent uses that its server, once up, does not offer is logged. */
  agents?: () => AgentsFile;
}

interface ServerState {
  mount: MountedMcpServer;
  connection: McpConnection;
  /** What the server listed last; undefined until it first connected. */
  listed: ListedMcpTool[] | undefined;
  /** Platform names registered for it. */
  mounted: Set<string>;
  /** Refused and changed tools (the down ones are added when announcing). */
  refused: WithdrawnTool[];
  /** Remounts run one after another. */
  queue: Promise<void>;
  /** Digest changes already reported (`name:digest`), so the log says each once. */
  reported: Set<string>;
  /** The configuration version its settings come from (0: the local file). */
  version: number;
  /** A newer version's server (another command, URL, …) starting while this one keeps serving. */
  candidate?: ServerState;
  /** A newer version's server that could not start: this one kept serving. */
  changeRefused?: { version: number; error: string; at: number };
}

const REASONS = ['server_down', 'digest_changed', 'refused'] as const;
const STATES: readonly McpServerState[] = ['starting', 'up', 'down'];

/**
 * The MCP servers of the configuration in force, as tools of this executor: each server's listed tools
 * are checked (name, size caps, pinned digest, a schema ajv compiles) and registered as platform tools
 * whose handler calls the server, so that they run through the same pipeline as tools declared in code.
 * Servers added or removed by a new configuration start or stop here.
 */
export class McpSource {
  readonly #deps: McpSourceDeps;
  readonly #limits: McpConnectionLimits;
  readonly #servers = new Map<string, ServerState>();
  readonly #listeners = new Set<() => void>();
  /** Agent tool names already logged as not offered (`agent:tool`), so that each is said once. */
  readonly #namesReported = new Set<string>();

  constructor(deps: McpSourceDeps, options: McpSourceOptions = {}) {
    this.#deps = deps;
    this.#limits = resolveMcpSourceOptions(options);
  }

  /** Calls `listener` whenever the tools this process serves changed (to announce them at once). */
  onChange(listener: () => void): void {
    this.#listeners.add(listener);
  }

  /**
   * Starts, stops and remounts servers to match `servers` (configuration `version`'s). A server that is up
   * and whose command, arguments, environment, folder or URL change keeps serving until the new one is up;
   * if the new one cannot start, the old one stays and the refusal is announced (`changeRefused`).
   */
  async apply(servers: readonly MountedMcpServer[], version = 0): Promise<void> {
    const wanted = new Map(
      servers.filter((s) => this.#deps.groups.includes(s.group)).map((s) => [s.spec.name, s]),
    );
    const stops: Promise<void>[] = [];
    const replacing = new Set<string>();
    for (const [name, state] of this.#servers) {
      const next = wanted.get(name);
      if (next && transportOf(next.spec) === transportOf(state.mount.spec)) {
        // Back to what runs (or unchanged): a change still starting or refused is no longer wanted.
        stops.push(this.#dropCandidate(state));
        this.#forgetRefusal(state);
        continue;
      }
      if (next && state.connection.up) {
        stops.push(this.#replaceWhenUp(state, next, version));
        replacing.add(name);
        continue;
      }
      this.#servers.delete(name);
      this.#forgetRefusal(state);
      // A server the configuration no longer names leaves the metrics (a stale `up 0` would keep its
      // alert firing); one restarted with another transport sets them again as it starts.
      if (next) {
        this.#gaugeState(name, undefined);
        stops.push(this.#stop(state));
      } else stops.push(this.#stop(state).then(() => this.#forgetSeries(name)));
    }
    await Promise.all(stops);
    const remounts: Promise<void>[] = [];
    for (const [name, mount] of wanted) {
      if (replacing.has(name)) continue;
      const state = this.#servers.get(name);
      if (state) {
        state.version = version;
        if (JSON.stringify(state.mount) === JSON.stringify(mount)) continue;
        state.mount = mount;
        remounts.push(this.#remount(state));
        continue;
      }
      this.#servers.set(name, this.#create(mount, version));
    }
    await Promise.all(remounts);
    this.#changed();
    for (const state of this.#servers.values()) this.#checkAgentNames(state);
  }

  /**
   * Logs (`warn`, once each) an agent naming a tool of a server that is up and does not offer it: a typo
   * in the agents file, or a tool the server no longer lists, `allow`/`deny` leave out or a pin hides. The
   * agent does not have that tool; the closest tool the server offers is named.
   */
  #checkAgentNames(state: ServerState): void {
    const agents = this.#deps.agents?.();
    if (!agents || !state.connection.up || state.listed === undefined) return;
    const server = state.mount.spec.name;
    const prefix = `${server}${MCP_NAME_SEPARATOR}`;
    const hidden = new Map(state.refused.map((r) => [r.name, r.message]));
    for (const agent of agents.agents.values())
      for (const tool of agent.tools) {
        if (!tool.startsWith(prefix) || state.mounted.has(tool)) continue;
        const key = `${agent.name}:${tool}`;
        if (this.#namesReported.has(key)) continue;
        this.#namesReported.add(key);
        const guess = hidden.has(tool) ? undefined : closestName(tool, state.mounted);
        this.#deps.logger.warn(
          { agent: agent.name, tool, server, ...(guess ? { didYouMean: guess } : {}), why: hidden.get(tool) },
          'an agent names a tool its MCP server does not offer; the agent does not have it',
        );
      }
  }

  /** Starts `next` beside a server that is up; it takes over once it lists its tools (see `#create`). */
  async #replaceWhenUp(state: ServerState, next: MountedMcpServer, version: number): Promise<void> {
    if (state.candidate && JSON.stringify(state.candidate.mount) === JSON.stringify(next)) return;
    await this.#dropCandidate(state);
    this.#forgetRefusal(state);
    state.candidate = this.#create(next, version);
    this.#deps.logger.info(
      { server: next.spec.name, version },
      'MCP server changed; the one running serves until the new one is up',
    );
  }

  #forgetRefusal(state: ServerState): void {
    if (!state.changeRefused) return;
    state.changeRefused = undefined;
    this.#deps.metrics.mcpServerChangeRefused.set({ server: state.mount.spec.name }, 0);
  }

  async #dropCandidate(state: ServerState): Promise<void> {
    const candidate = state.candidate;
    if (!candidate) return;
    state.candidate = undefined;
    await candidate.connection.close();
  }

  /** Tools known but not served now: a down server's, changed ones, refused ones. */
  withdrawn(): WithdrawnTool[] {
    const out: WithdrawnTool[] = [];
    for (const state of this.#servers.values()) {
      out.push(...state.refused);
      if (state.connection.up) continue;
      for (const name of state.mounted)
        out.push({
          name,
          server: state.mount.spec.name,
          reason: 'server_down',
          message: `server "${state.mount.spec.name}" is down and being restarted`,
        });
    }
    return out;
  }

  /** The servers' states, for the announcement. */
  servers(): McpServerStatus[] {
    return [...this.#servers.values()].map((s) => {
      const { connection } = s;
      const digestsRefused = s.refused.filter((r) => r.reason === 'digest_changed').length;
      return {
        name: s.mount.spec.name,
        group: s.mount.group,
        up: connection.up,
        state: connection.state,
        since: connection.since,
        restarts: connection.restarts,
        tools: s.mounted.size,
        version: s.version,
        ...(digestsRefused > 0 ? { digestsRefused } : {}),
        ...(connection.up || connection.error === undefined ? {} : { error: connection.error }),
        ...(s.candidate ? { pendingVersion: s.candidate.version } : {}),
        ...(s.changeRefused ? { changeRefused: { ...s.changeRefused } } : {}),
      };
    });
  }

  /** Everything the announcement says of MCP servers and their tools. */
  report(): SourcesReport {
    return { withdrawn: this.withdrawn(), mcpServers: this.servers() };
  }

  async close(): Promise<void> {
    const all = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.all(all.map((s) => Promise.all([this.#dropCandidate(s), this.#stop(s)])));
  }

  /**
   * A server's state with its connection started. Either it is the server in force (in `#servers`), or
   * the candidate of one that is up: a candidate takes over when it lists its tools, and is dropped, the
   * refusal kept on the one in force, when its first connection fails.
   */
  #create(mount: MountedMcpServer, version: number): ServerState {
    const { logger, metrics } = this.#deps;
    const server = mount.spec.name;
    const state: ServerState = {
      mount,
      connection: undefined as unknown as McpConnection,
      listed: undefined,
      mounted: new Set(),
      refused: [],
      queue: Promise.resolve(),
      reported: new Set(),
      version,
    };
    const owner = () => {
      const current = this.#servers.get(server);
      return current?.candidate === state ? current : undefined;
    };
    state.connection = new McpConnection({
      spec: mount.spec,
      env: this.#deps.env,
      limits: this.#limits,
      logger,
      onTools: (tools) => {
        const replaced = owner();
        if (replaced) {
          replaced.candidate = undefined;
          this.#servers.set(server, state);
          this.#gaugeState(server, state.connection.state);
          metrics.mcpServerChangeRefused.set({ server }, 0);
          void this.#stop(replaced);
          logger.info({ server, version }, 'MCP server replaced by the new one, now up');
        }
        if (this.#servers.get(server) !== state) return;
        metrics.mcpServerUp.set({ server }, 1);
        state.listed = tools;
        void this.#remount(state);
      },
      onDown: (why) => {
        const kept = owner();
        if (kept) {
          kept.candidate = undefined;
          kept.changeRefused = { version, error: why, at: Date.now() };
          metrics.mcpServerChangeRefused.set({ server }, 1);
          logger.warn(
            { server, version, why },
            'MCP server change refused: the new one could not start; the one running keeps serving',
          );
          void state.connection.close();
          this.#changed();
          return;
        }
        if (this.#servers.get(server) !== state) return;
        metrics.mcpServerUp.set({ server }, 0);
        metrics.mcpServerRestarts.inc({ server });
        this.#count(state);
        this.#changed();
      },
      onProtocolError: () => metrics.mcpProtocolErrors.inc({ server }),
      onState: (now) => {
        if (this.#servers.get(server) === state) this.#gaugeState(server, now);
      },
    });
    if (!this.#servers.has(server)) {
      metrics.mcpServerUp.set({ server }, 0);
      this.#gaugeState(server, 'starting');
    }
    state.connection.start();
    return state;
  }

  /** Removes every per-server series of a server that left the configuration. */
  #forgetSeries(server: string): void {
    const { metrics } = this.#deps;
    metrics.mcpServerUp.remove({ server });
    metrics.mcpServerChangeRefused.remove({ server });
    for (const state of STATES) metrics.mcpServerState.remove({ server, state });
    for (const reason of REASONS) metrics.mcpToolsWithdrawn.remove({ server, reason });
    metrics.mcpServerRestarts.remove({ server });
    metrics.mcpProtocolErrors.remove({ server });
  }

  /** `agent_reach_mcp_server_state`: 1 on the server's state, 0 on the others (undefined: all 0). */
  #gaugeState(server: string, now: McpServerState | undefined): void {
    for (const s of STATES) this.#deps.metrics.mcpServerState.set({ server, state: s }, s === now ? 1 : 0);
  }

  async #stop(state: ServerState): Promise<void> {
    for (const name of state.mounted) this.#deps.registry.unregister(name);
    state.mounted.clear();
    state.refused = [];
    for (const reason of REASONS)
      this.#deps.metrics.mcpToolsWithdrawn.set({ server: state.mount.spec.name, reason }, 0);
    await state.connection.close();
  }

  #remount(state: ServerState): Promise<void> {
    state.queue = state.queue
      .then(() => this.#mount(state))
      .catch((err: unknown) =>
        this.#deps.logger.error(
          { err, server: state.mount.spec.name },
          'could not mount the MCP server tools',
        ),
      );
    return state.queue;
  }

  /** Registers the server's listed tools as platform tools, each checked; the rest are withdrawn, said why. */
  async #mount(state: ServerState): Promise<void> {
    const { registry, logger } = this.#deps;
    if (this.#servers.get(state.mount.spec.name) !== state) return;
    const { spec, group } = state.mount;
    const refused: WithdrawnTool[] = [];
    const refuse = (name: string, message: string, digest?: string) =>
      refused.push({ name, server: spec.name, reason: 'refused', message, ...(digest ? { digest } : {}) });
    const listed = state.listed ?? [];
    const candidates: PinCandidate[] = [];
    const names = new Set<string>();
    listed.forEach((tool, i) => {
      const toolName = String(tool?.name);
      if (spec.allow && !spec.allow.includes(toolName)) return;
      if (spec.deny?.includes(toolName)) return;
      const name = platformName(spec.name, toolName);
      if (i >= constants.MCP_MAX_TOOLS_PER_SERVER)
        return refuse(
          name,
          `server "${spec.name}": tool "${toolName}" is past the cap of ${constants.MCP_MAX_TOOLS_PER_SERVER} tools per server`,
        );
      const problem = unmountable(spec.name, tool);
      if (problem) return refuse(name.slice(0, 200), problem);
      if (names.has(name))
        return refuse(name, `server "${spec.name}": tool "${toolName}" is listed twice; neither is mounted`);
      names.add(name);
      candidates.push({ tool, name, digest: toolDigest(tool) });
    });
    // A name listed twice mounts neither: which one the model would get is not for the server to decide.
    const twice = new Set(refused.filter((r) => r.message.endsWith('neither is mounted')).map((r) => r.name));
    const accepted = await checkPins(
      { ...this.#deps, spec, reported: state.reported },
      candidates.filter((c) => !twice.has(c.name)),
      refused,
    );
    if (this.#servers.get(spec.name) !== state) return;
    for (const name of state.mounted) registry.unregister(name);
    state.mounted.clear();
    for (const { tool, name, digest } of accepted) {
      if (registry.has(name)) {
        refuse(
          name,
          `server "${spec.name}": tool "${tool.name}": the name "${name}" is already taken by another tool`,
          digest,
        );
        continue;
      }
      try {
        registry.register(mcpToolDefinition(spec, group, tool, digest, this.#call(state, spec)));
        state.mounted.add(name);
      } catch (err) {
        refuse(name, `server "${spec.name}": tool "${tool.name}" refused: ${(err as Error).message}`, digest);
      }
    }
    for (const r of refused)
      if (r.reason === 'refused' && !state.reported.has(`${r.name}:${r.message}`)) {
        state.reported.add(`${r.name}:${r.message}`);
        logger.warn({ server: spec.name, tool: r.name, problem: r.message }, 'MCP tool refused');
      }
    state.refused = refused;
    this.#count(state);
    this.#changed();
    this.#checkAgentNames(state);
  }

  #call(state: ServerState, spec: McpServerSpec): McpCall {
    return async (tool, args, ctx) => {
      const override =
        spec.tools !== undefined && Object.hasOwn(spec.tools, tool) ? spec.tools[tool] : undefined;
      const timeoutMs =
        (override?.timeout_ms ?? constants.DEFAULT_TOOL_TIMEOUT_MS) + constants.MCP_REQUEST_SLACK_MS;
      // Which call this is, as a tool in code sees it (`ToolContext`): a server that changes something can
      // key it by the idempotency key, the same across redeliveries and retries of the call.
      const meta = {
        'agent-reach/run_id': ctx.runId,
        'agent-reach/tool_call_id': ctx.toolCallId,
        'agent-reach/idempotency_key': ctx.idempotencyKey,
        'agent-reach/attempt': ctx.attempt,
      };
      const outcome = await state.connection.call(tool, args, { signal: ctx.signal, timeoutMs, meta });
      if (outcome.error !== undefined) throw callError(spec.name, tool, outcome.error, outcome.overflow);
      return outcome.result;
    };
  }

  #count(state: ServerState): void {
    const server = state.mount.spec.name;
    const counts = { server_down: 0, digest_changed: 0, refused: 0 };
    for (const r of state.refused) counts[r.reason] += 1;
    if (!state.connection.up) counts.server_down = state.mounted.size;
    for (const reason of REASONS)
      this.#deps.metrics.mcpToolsWithdrawn.set({ server, reason }, counts[reason]);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** What makes a new connection necessary when it changes. */
function transportOf(spec: McpServerSpec): string {
  return JSON.stringify([spec.command, spec.args, spec.env, spec.cwd, spec.url, spec.headers_from_env]);
}
