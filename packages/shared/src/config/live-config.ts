import { createHash } from 'node:crypto';
import { existsSync, readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { parse } from 'yaml';
import { loadAgents, parseAgents, type AgentSpec, type AgentsFile, type ConfigDocument } from './agents.js';
import { loadWorkflows, parseWorkflowsDocument, type WorkflowsFile } from './workflows.js';
import { parseProviders, type ProvidersFile } from './providers.js';
import { DEFAULT_CONFIG_FILE_POLL_MS, DEFAULT_CONFIG_POLL_MS } from '../constants.js';
import { AgentReachError, type Keys } from '@agent-reach/protocol';
import type { Logger } from '../observability/logger.js';
import type { RedisClient } from '../redis/connection.js';

/** One version of the fleet's configuration, as a process holds it. */
export interface FleetConfig {
  /** The published version; 0 while the process runs on its local file (nothing published yet). */
  readonly version: number;
  /** sha256 (hex, first 16) of the canonical document: tells two file versions apart. */
  readonly digest: string;
  readonly source: 'file' | 'published';
  readonly agents: AgentsFile;
  /** The workflows in force, checked against these agents. */
  readonly workflows: WorkflowsFile;
  /**
   * The model providers and prices this version carries (`config apply --providers`); absent: each
   * scheduler's local providers file (read at its start) stays in force.
   */
  readonly providers?: ProvidersFile;
}

/** What a published configuration looks like in Redis (`keys.config`). */
export interface PublishedConfig {
  version: number;
  document: string;
  digest: string;
  appliedAt: number;
  source: string;
  /** Who applied it (an operator name, else user@host); empty for versions published before it was recorded. */
  appliedBy: string;
}

/** How many published versions the history keeps. */
export const CONFIG_HISTORY_LENGTH = 100;

export interface LiveConfigOptions {
  /** A command connection; the subscription uses a duplicate of it. */
  redis: RedisClient;
  keys: Keys;
  /** The local agents file, used while no configuration is published. */
  file: string;
  /**
   * The local workflows file, used (and watched) beside `file` while no configuration is published, and
   * for a published version that carries no `workflows` (one published before workflows joined the
   * configuration). Without it such a version, or the local files, declare no workflows; so does a file
   * that does not exist (yet): it is taken up when it is created.
   */
  workflowsFile?: string | undefined;
  logger: Logger;
  /**
   * Tools this process registers: a local file naming another one is refused; a published configuration
   * naming one is logged (the fleet's catalog was checked when it was applied; the tool stays unknown here).
   */
  knownTools?: Iterable<string>;
  /** How often the published version is checked, in ms. Default DEFAULT_CONFIG_POLL_MS. */
  pollMs?: number;
  /** How often the local file is checked while it is in force, in ms. Default DEFAULT_CONFIG_FILE_POLL_MS. */
  filePollMs?: number;
  /**
   * What this process checks of a published version before taking it (a scheduler: that it can serve the
   * version's providers and every agent's models); a throw refuses the version, as an invalid one is.
   */
  accept?: (next: FleetConfig) => void;
}

/** The digest of a configuration document (key order as written). */
export function configDigest(document: ConfigDocument): string {
  return createHash('sha256').update(JSON.stringify(document)).digest('hex').slice(0, 16);
}

/**
 * Publishes a validated document as the fleet's next configuration version and tells every process.
 * Returns the new version. Validation is the caller's: publish only what `parseAgents` accepted.
 */
export async function publishConfig(
  redis: RedisClient,
  keys: Keys,
  document: ConfigDocument,
  source: string,
  appliedBy = '',
): Promise<number> {
  const json = JSON.stringify(document);
  const appliedAt = Date.now();
  // Version and document change in one transaction: a reader never sees a version with another's document.
  const replies = await redis
    .multi()
    .hincrby(keys.config, 'version', 1)
    .hset(keys.config, {
      document: json,
      digest: configDigest(document),
      applied_at: String(appliedAt),
      source: source.slice(0, 200),
      applied_by: appliedBy.slice(0, 200),
    })
    .exec();
  const version = Number(replies?.[0]?.[1]);
  if (replies?.some(([err]) => err) || !Number.isInteger(version)) {
    throw new AgentReachError('CONFIG_INVALID', 'the configuration could not be published');
  }
  // The history is another key (another slot on a cluster): written after the version, bounded.
  const entry: PublishedConfig = {
    version,
    document: json,
    digest: configDigest(document),
    appliedAt,
    source: source.slice(0, 200),
    appliedBy: appliedBy.slice(0, 200),
  };
  await redis
    .multi()
    .zadd(keys.configHistory, version, JSON.stringify(entry))
    .zremrangebyrank(keys.configHistory, 0, -(CONFIG_HISTORY_LENGTH + 1))
    .exec();
  await redis.publish(keys.configChannel, String(version));
  return version;
}

/** The versions the history keeps, newest first. */
export async function readConfigHistory(redis: RedisClient, keys: Keys): Promise<PublishedConfig[]> {
  const rows = await redis.zrevrange(keys.configHistory, 0, -1);
  return rows.flatMap((row) => historyEntry(row));
}

/** One version from the history; undefined when the history does not hold it. */
export async function readConfigVersion(
  redis: RedisClient,
  keys: Keys,
  version: number,
): Promise<PublishedConfig | undefined> {
  const rows = await redis.zrangebyscore(keys.configHistory, version, version);
  return rows.flatMap((row) => historyEntry(row))[0];
}

function historyEntry(row: string): PublishedConfig[] {
  try {
    const e = JSON.parse(row) as Partial<PublishedConfig>;
    if (typeof e.version !== 'number' || typeof e.document !== 'string') return [];
    return [
      {
        version: e.version,
        document: e.document,
        digest: typeof e.digest === 'string' ? e.digest : '',
        appliedAt: typeof e.appliedAt === 'number' ? e.appliedAt : 0,
        source: typeof e.source === 'string' ? e.source : '',
        appliedBy: typeof e.appliedBy === 'string' ? e.appliedBy : '',
      },
    ];
  } catch {
    return [];
  }
}

/** The published configuration, or undefined when none was ever published. */
export async function readPublishedConfig(
  redis: RedisClient,
  keys: Keys,
): Promise<PublishedConfig | undefined> {
  const h = await redis.hgetall(keys.config);
  const version = Number(h.version);
  if (!h.document || !Number.isInteger(version) || version < 1) return undefined;
  return {
    version,
    document: h.document,
    digest: h.digest ?? '',
    appliedAt: Number(h.applied_at ?? 0),
    source: h.source ?? '',
    appliedBy: h.applied_by ?? '',
  };
}

/**
 * The fleet's configuration as it changes while the process runs. Precedence: a published configuration
 * (`agent-reach config apply`) always wins; the local file is in force only while nothing is published,
 * and then a valid change of the file is taken up (each process re-reads its own file). A version that
 * does not validate is never taken: the one in force stays, and the problems are logged. Swaps are atomic:
 * `current()` returns one whole version, and the `agents` view reads the newest at each access.
 */
export class LiveConfig {
  readonly #opts: LiveConfigOptions;
  #current: FleetConfig;
  readonly #listeners = new Set<(next: FleetConfig, previous: FleetConfig) => void>();
  #subscriber: RedisClient | undefined;
  #poll: NodeJS.Timeout | undefined;
  #watching = false;
  #refreshing: Promise<void> | undefined;
  #again = false;
  #closed = false;
  /** `version:digest` of a published version this process could not take (logged once, not every poll). */
  #refused: string | undefined;
  /** An AgentsFile that always answers from the configuration in force. */
  readonly agents: AgentsFile;
  /** The workflows of the configuration in force, read afresh at each access. */
  readonly workflows: WorkflowsFile;

  private constructor(opts: LiveConfigOptions, initial: FleetConfig) {
    this.#opts = opts;
    this.#current = initial;
    const now = () => this.#current.agents;
    this.agents = {
      get agents() {
        return now().agents;
      },
      reachable: (agent) => now().reachable(agent),
      get toolGroups() {
        return now().toolGroups;
      },
      get document() {
        return now().document;
      },
    };
    const workflows = () => this.#current.workflows;
    this.workflows = {
      get workflows() {
        return workflows().workflows;
      },
      get document() {
        return workflows().document;
      },
    };
  }

  /**
   * Reads the published configuration (or, when none is published, the file: then an invalid file is a
   * start-up error), subscribes to new versions and starts polling as a fallback.
   */
  static async start(opts: LiveConfigOptions): Promise<LiveConfig> {
    const published = await readPublishedConfig(opts.redis, opts.keys);
    const initial = published ? parsePublished(published, opts) : fromFile(opts);
    const live = new LiveConfig(opts, initial);
    await live.#subscribe();
    live.#poll = setInterval(() => void live.refresh(), opts.pollMs ?? DEFAULT_CONFIG_POLL_MS);
    live.#poll.unref();
    if (!published) live.#watchFile();
    opts.logger.info({ configVersion: initial.version, source: initial.source }, 'configuration loaded');
    if (!published && opts.workflowsFile && !existsSync(opts.workflowsFile))
      opts.logger.info(
        { file: opts.workflowsFile },
        'no workflows file yet: no workflows until it is created (it is watched)',
      );
    return live;
  }

  current(): FleetConfig {
    return this.#current;
  }

  /** Calls `listener` after every swap; returns a function that removes it. */
  onChange(listener: (next: FleetConfig, previous: FleetConfig) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Checks for a newer published version now and takes it if it validates. */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      // A read already under way may have missed what this call was made for: read once more after it.
      this.#again = true;
      return this.#refreshing;
    }
    this.#refreshing = (async () => {
      do {
        this.#again = false;
        await this.#refreshPublished();
      } while (this.#again && !this.#closed);
    })().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    this.#unwatchFile();
    await this.#refreshing;
    if (this.#subscriber) await this.#subscriber.quit().catch(() => this.#subscriber?.disconnect());
  }

  async #refreshPublished(): Promise<void> {
    if (this.#closed) return;
    const log = this.#opts.logger;
    // The hash holds only the latest version, so any difference from the one in force is news (a
    // version lower than ours means Redis lost the configuration and it was published afresh).
    const differs = (version: number, digest: string | null) =>
      Number.isInteger(version) &&
      version >= 1 &&
      `${version}:${digest}` !== this.#refused &&
      (this.#current.source === 'file' ||
        version !== this.#current.version ||
        digest !== this.#current.digest);
    let published: PublishedConfig | undefined;
    try {
      const [version, digest] = await this.#opts.redis.hmget(this.#opts.keys.config, 'version', 'digest');
      if (!differs(Number(version), digest ?? null)) return;
      published = await readPublishedConfig(this.#opts.redis, this.#opts.keys);
    } catch (err) {
      log.warn({ err }, 'could not read the published configuration; keeping the one in force');
      return;
    }
    if (!published || !differs(published.version, published.digest) || this.#closed) return;
    let next: FleetConfig;
    try {
      next = parsePublished(published, this.#opts);
      this.#opts.accept?.(next);
    } catch (err) {
      const e = err as AgentReachError;
      log.error(
        { configVersion: published.version, problems: e.details?.length ? e.details : [e.message] },
        'published configuration refused; keeping the one in force',
      );
      this.#refused = `${published.version}:${published.digest}`;
      return;
    }
    this.#unwatchFile();
    this.#swap(next);
  }

  #swap(next: FleetConfig): void {
    const previous = this.#current;
    this.#current = next;
    this.#opts.logger.info(
      { configVersion: next.version, digest: next.digest, previousVersion: previous.version },
      'configuration changed',
    );
    for (const listener of this.#listeners) {
      try {
        listener(next, previous);
      } catch (err) {
        this.#opts.logger.error({ err }, 'a configuration listener failed');
      }
    }
  }

  async #subscribe(): Promise<void> {
    const sub = this.#opts.redis.duplicate();
    this.#subscriber = sub;
    sub.on('error', (err: unknown) =>
      this.#opts.logger.warn({ err }, 'configuration subscription error; polling continues'),
    );
    sub.on('message', () => void this.refresh());
    await sub.subscribe(this.#opts.keys.configChannel);
  }

  /** The local files in force: the agents file, and the workflows file when there is one. */
  #files(): string[] {
    return [this.#opts.file, ...(this.#opts.workflowsFile ? [this.#opts.workflowsFile] : [])];
  }

  #watchFile(): void {
    this.#watching = true;
    for (const file of this.#files())
      watchFile(
        file,
        { interval: this.#opts.filePollMs ?? DEFAULT_CONFIG_FILE_POLL_MS, persistent: false },
        this.#onFile,
      );
  }

  #unwatchFile(): void {
    if (!this.#watching) return;
    this.#watching = false;
    for (const file of this.#files()) unwatchFile(file, this.#onFile);
  }

  /**
   * Either file changed, appeared or went away: both are read again, as one version (a workflow is checked
   * against the agents).
   */
  readonly #onFile = (now: Stats, before: Stats): void => {
    if (this.#closed || this.#current.source !== 'file' || sameFile(now, before)) return;
    let next: FleetConfig;
    try {
      next = fromFile(this.#opts);
    } catch (err) {
      const e = err as AgentReachError;
      this.#opts.logger.error(
        {
          file: e.code === 'WORKFLOWS_INVALID' ? this.#opts.workflowsFile : this.#opts.file,
          problems: e.details?.length ? e.details : [e.message],
        },
        e.code === 'WORKFLOWS_INVALID'
          ? 'changed workflows file refused; keeping the configuration in force'
          : 'changed agents file refused; keeping the configuration in force',
      );
      return;
    }
    if (next.digest !== this.#current.digest) this.#swap(next);
  };
}

/**
 * The fleet's configuration as it is now, without following it: the published version, or the local
 * files while nothing is published. For one-off readers (the CLI); processes use `LiveConfig`.
 */
export async function readFleetConfig(
  opts: Pick<LiveConfigOptions, 'redis' | 'keys' | 'file' | 'workflowsFile' | 'knownTools' | 'logger'>,
): Promise<FleetConfig> {
  const published = await readPublishedConfig(opts.redis, opts.keys);
  return published ? parsePublished(published, opts) : fromFile(opts);
}

/**
 * Whether a watched file is as it was. An editor that saves by writing a new file and renaming it over
 * the old one may keep the old modification time (`cp -p`, `mv` of a prepared file, coarse clocks): the
 * inode and change time tell it apart. A file that does not exist stats as all zeros.
 */
function sameFile(now: Stats, before: Stats): boolean {
  return (
    now.mtimeMs === before.mtimeMs &&
    now.ctimeMs === before.ctimeMs &&
    now.ino === before.ino &&
    now.size === before.size
  );
}

/** The local workflows file when it exists: one not (yet) created declares no workflows. */
function presentWorkflowsFile(file: string | undefined): string | undefined {
  return file !== undefined && existsSync(file) ? file : undefined;
}

/** The output schemas the agents declare, by agent (for the workflows' field checks). */
function agentOutputSchemas(agents: AgentsFile): Map<string, Record<string, unknown>> {
  return new Map(
    [...agents.agents].flatMap(([name, a]) =>
      a.output_schema ? [[name, a.output_schema as Record<string, unknown>] as const] : [],
    ),
  );
}

/** The local files as one version 0: the agents file, and the workflows file checked against it. */
function fromFile(opts: Pick<LiveConfigOptions, 'file' | 'workflowsFile' | 'knownTools'>): FleetConfig {
  const agents = loadAgents(opts.file, opts.knownTools);
  const workflows = loadWorkflows(presentWorkflowsFile(opts.workflowsFile), agents.agents.keys(), {
    agentOutputSchemas: agentOutputSchemas(agents),
  });
  // The digest covers both files, so that a change of either is a new version.
  const document: ConfigDocument = { ...agents.document, workflows: workflows.document };
  return { version: 0, digest: configDigest(document), source: 'file', agents, workflows };
}

/** A configuration file (YAML, or JSON as `config show` prints it) parsed, not yet checked. */
export function readConfigFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentReachError('CONFIG_INVALID', `${file}: cannot read ${what}: ${(err as Error).message}`);
  }
  try {
    return parse(text) as unknown;
  } catch (err) {
    throw new AgentReachError('CONFIG_INVALID', `${file}: not valid YAML: ${(err as Error).message}`);
  }
}

/** Where a configuration's workflows come from when its document holds none. */
export type WorkflowsSource =
  /** A workflows document (`{ workflows: [...] }`, e.g. a workflows file parsed), named by `label`. */
  | { document: unknown; label: string }
  /** A workflows file; none: no workflows. */
  | { file: string | undefined };

/**
 * Checks a configuration document as a whole: agents and tool groups, then the workflows (its own
 * `workflows`, else those of `workflows`) against those agents. Every problem of both is listed at once,
 * each naming where it is.
 */
export function parseConfigDocument(
  document: unknown,
  label: string,
  opts: {
    knownTools?: Iterable<string> | undefined;
    workflows?: WorkflowsSource;
    /** The models a workflow node may name (`ALLOWED_MODELS`); without it, models are not checked. */
    allowedModels?: Iterable<string> | undefined;
  } = {},
): { agents: AgentsFile; workflows: WorkflowsFile; providers?: ProvidersFile } {
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw new AgentReachError('CONFIG_INVALID', `${label}: must be a mapping with "agents"`);
  const {
    workflows: declared,
    providers: providersDocument,
    ...rest
  } = document as { workflows?: unknown; providers?: unknown; [key: string]: unknown };
  const problems: string[] = [];
  // A version's providers: the providers file's document (`providers`, `prices`) under one key.
  let providers: ProvidersFile | undefined;
  if (providersDocument !== undefined) {
    try {
      providers = parseProviders(JSON.stringify(providersDocument), `${label}: providers`);
    } catch (err) {
      const e = err as AgentReachError;
      problems.push(...(e.details?.length ? e.details : [e.message]));
    }
  }
  const detailsOf = (err: unknown) => {
    const e = err as AgentReachError;
    return e.details?.length ? [...e.details] : [e.message];
  };
  let agents: AgentsFile | undefined;
  try {
    agents = parseAgents(JSON.stringify(rest), label, opts.knownTools);
  } catch (err) {
    problems.push(...detailsOf(err));
  }
  // With agents that do not validate, the workflows are still checked against the names declared.
  const agentNames = agents
    ? [...agents.agents.keys()]
    : (Array.isArray(rest.agents) ? (rest.agents as unknown[]) : []).flatMap((a) => {
        const name = (a as { name?: unknown } | null)?.name;
        return typeof name === 'string' ? [name] : [];
      });
  const source = opts.workflows ?? { file: undefined };
  const check = {
    allowedModels: opts.allowedModels,
    ...(agents ? { agentOutputSchemas: agentOutputSchemas(agents) } : {}),
  };
  let workflows: WorkflowsFile | undefined;
  try {
    if (declared !== undefined && 'document' in source)
      problems.push(`${label}: declares workflows, and ${source.label} is given too: use one of them`);
    else if (declared !== undefined)
      workflows = parseWorkflowsDocument({ workflows: declared }, label, agentNames, check);
    else if ('document' in source)
      workflows = parseWorkflowsDocument(source.document, source.label, agentNames, check);
    else workflows = loadWorkflows(source.file, agentNames, check);
  } catch (err) {
    problems.push(...detailsOf(err));
  }
  if (problems.length > 0 || !agents || !workflows)
    throw new AgentReachError('CONFIG_INVALID', problems.join('\n'), { details: problems });
  return { agents, workflows, ...(providers ? { providers } : {}) };
}

function parsePublished(
  published: PublishedConfig,
  opts: Pick<LiveConfigOptions, 'workflowsFile' | 'knownTools' | 'logger'>,
): FleetConfig {
  let document: unknown;
  try {
    document = JSON.parse(published.document);
  } catch {
    throw new AgentReachError(
      'CONFIG_INVALID',
      `configuration version ${published.version}: the published document is not JSON`,
    );
  }
  // Tools are checked as a warning below: the fleet's catalog was checked when the version was applied.
  const { agents, workflows, providers } = parseConfigDocument(
    document,
    `configuration version ${published.version}`,
    {
      workflows: { file: presentWorkflowsFile(opts.workflowsFile) },
    },
  );
  if (opts.knownTools) {
    const known = new Set(opts.knownTools);
    const unknown = [...agents.agents.values()].flatMap((a: AgentSpec) =>
      a.tools.filter((t) => !known.has(t)).map((t) => `${a.name}: ${t}`),
    );
    if (unknown.length > 0) {
      opts.logger.warn(
        { configVersion: published.version, unknown },
        'the configuration names tools this process does not register',
      );
    }
  }
  return {
    version: published.version,
    digest: published.digest,
    source: 'published',
    agents,
    workflows,
    ...(providers ? { providers } : {}),
  };
}
