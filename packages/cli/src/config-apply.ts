import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { createKeys, type AgentReachError } from '@agent-reach/protocol';
import {
  liveAnnouncements,
  parseConfigDocument,
  pinAnnouncedDigests,
  publishConfig,
  readConfigFile,
  readConfigVersion,
  readPublishedConfig,
  redisTimeMs,
  workflowsFileOf,
  declaredModels,
  loadProviders,
  parseProviders,
  providersFileOf,
  type ProviderSpec,
  type ProvidersFile,
  type WorkflowsSource,
} from '@agent-reach/shared';
import { localRegistry } from './config-check.js';
import { checkProviders } from './config-providers.js';
import type { CliContext } from './context.js';

/** What `config apply` did: the version published, or the problems that refused the files. */
export type ApplyOutcome =
  | {
      published: true;
      version: number;
      /** How many workflows the version declares, and where they came from, in words. */
      workflows: { count: number; from: string };
      /** How many model providers the version declares, and where they came from; absent: none carried. */
      providers?: { count: number; from: string };
    }
  | { published: false; problems: string[]; inForce: number | undefined };

/**
 * Validates an agents file, and the workflows that go with it, and publishes both as the fleet's next
 * configuration version. The tools it names are checked against the live executors' catalog (or, with no
 * executor live, against the tools an executor started with this environment would register); the
 * workflows' agents against the agents of the same file. The workflows are, in order: those the file
 * itself declares (a `workflows` key, as `config show` prints a version), else `workflowsFile`, else the
 * ones in force, kept (the published version's, or the local workflows file while nothing published
 * carries workflows). Anything wrong refuses the whole apply, every problem listed, and the version in
 * force stays.
 */
export async function configApply(
  ctx: CliContext,
  env: Record<string, string | undefined>,
  file: string,
  options: { workflowsFile?: string; providersFile?: string; by?: string } = {},
): Promise<ApplyOutcome> {
  const keys = createKeys(ctx.config.keyPrefix);
  const inForce = await readPublishedConfig(ctx.redis, keys);
  const refuse = (problems: string[]): ApplyOutcome => ({
    published: false,
    problems,
    inForce: inForce?.version,
  });
  const read = (path: string, what: string): { doc?: unknown; problem?: string } => {
    try {
      return { doc: readConfigFile(path, what) };
    } catch (err) {
      return { problem: (err as Error).message };
    }
  };
  const agentsDoc = read(file, 'agents file');
  const workflowsDoc = options.workflowsFile ? read(options.workflowsFile, 'workflows file') : undefined;
  const unreadable = [agentsDoc.problem, workflowsDoc?.problem].filter((p): p is string => !!p);
  if (unreadable.length > 0) return refuse(unreadable);
  const providers = versionProviders(agentsDoc.doc, file, options.providersFile, inForce, ctx.config);
  if ('problems' in providers) return refuse(providers.problems);

  const known = await knownTools(ctx, env);
  if ('problems' in known) return refuse(known.problems);

  const declaresOwn =
    typeof agentsDoc.doc === 'object' && agentsDoc.doc !== null && 'workflows' in agentsDoc.doc;
  const source: { workflows: WorkflowsSource; from: string } =
    options.workflowsFile && workflowsDoc
      ? {
          workflows: { document: workflowsDoc.doc, label: options.workflowsFile },
          from: options.workflowsFile,
        }
      : declaresOwn
        ? { workflows: { file: undefined }, from: file }
        : carriedWorkflows(inForce, workflowsFileOf(ctx.config));
  let parsed;
  try {
    parsed = parseConfigDocument(agentsDoc.doc, file, {
      knownTools: known.names,
      workflows: source.workflows,
      allowedModels: [
        ...ctx.config.api.allowedModels,
        ...(providers.file ? declaredModels(providers.file) : []),
      ],
    });
  } catch (err) {
    const e = err as AgentReachError;
    return refuse(e.details?.length ? [...e.details] : [e.message]);
  }
  // Every agent's model and fallback against the providers the version will be served with.
  const models = checkProviders(
    { ...ctx.config, agentsFile: file },
    env,
    parsed.agents,
    () => undefined,
    providers.file ?? loadProviders(ctx.config),
  );
  if (models.problems.length > 0) return refuse(models.problems);
  // MCP tools are pinned at the digests the fleet serves them with (see docs/mcp.md, Pinning).
  const document = pinAnnouncedDigests(
    {
      ...parsed.agents.document,
      workflows: parsed.workflows.document,
      ...(providers.file ? { providers: providersDocument(providers.file) } : {}),
    },
    known.announced,
  );
  const version = await publishConfig(
    ctx.redis,
    keys,
    document,
    `config apply ${file}${options.workflowsFile ? ` --workflows ${options.workflowsFile}` : ''}${options.providersFile ? ` --providers ${options.providersFile}` : ''}`,
    operator(env, options.by),
  );
  return {
    published: true,
    version,
    workflows: { count: parsed.workflows.workflows.size, from: source.from },
    ...(providers.file
      ? { providers: { count: providers.file.providers.length, from: providers.from } }
      : {}),
  };
}

/**
 * Publishes an earlier version's document again as the next version, checked as an apply is: its tools
 * against the live executors (or the local registry), its workflows against its agents. Undefined when
 * the history holds no such version.
 */
export async function configRollback(
  ctx: CliContext,
  env: Record<string, string | undefined>,
  version: number,
  options: { by?: string } = {},
): Promise<ApplyOutcome | undefined> {
  const keys = createKeys(ctx.config.keyPrefix);
  const [entry, inForce] = await Promise.all([
    readConfigVersion(ctx.redis, keys, version),
    readPublishedConfig(ctx.redis, keys),
  ]);
  if (!entry) return undefined;
  const refuse = (problems: string[]): ApplyOutcome => ({
    published: false,
    problems,
    inForce: inForce?.version,
  });
  const known = await knownTools(ctx, env);
  if ('problems' in known) return refuse(known.problems);
  const label = `configuration version ${version}`;
  let parsed;
  try {
    const doc = JSON.parse(entry.document) as { workflows?: unknown };
    // A version published before workflows joined the configuration keeps the workflows in force.
    const workflows: WorkflowsSource =
      doc.workflows === undefined
        ? carriedWorkflows(inForce, workflowsFileOf(ctx.config)).workflows
        : { file: undefined };
    parsed = parseConfigDocument(doc, label, { knownTools: known.names, workflows });
  } catch (err) {
    const e = err as AgentReachError;
    return refuse(e.details?.length ? [...e.details] : [e.message]);
  }
  const document = { ...parsed.agents.document, workflows: parsed.workflows.document };
  const published = await publishConfig(
    ctx.redis,
    keys,
    document,
    `config rollback ${version}`,
    operator(env, options.by),
  );
  return {
    published: true,
    version: published,
    workflows: { count: parsed.workflows.workflows.size, from: label },
  };
}

/** Who applies: `--by`, else `AGENT_REACH_OPERATOR`, else the user and host this runs as. */
export function operator(env: Record<string, string | undefined>, by: string | undefined): string {
  const name = by?.trim() || env.AGENT_REACH_OPERATOR?.trim();
  if (name) return name.slice(0, 200);
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No user entry for this uid (a container): the host still tells where it came from.
  }
  return `${user}@${hostname()}`;
}

/** The tools the live executors announce, as `config apply` pins MCP tools at their digests. */
type LiveTools = ReturnType<typeof liveAnnouncements>[number]['tools'];

/** The tools a configuration may name: the live executors' (or, with none live, the local registry's). */
async function knownTools(
  ctx: CliContext,
  env: Record<string, string | undefined>,
): Promise<{ names: Iterable<string>; announced: LiveTools } | { problems: string[] }> {
  const keys = createKeys(ctx.config.keyPrefix);
  const [catalog, time] = await Promise.all([ctx.redis.hgetall(keys.catalog), ctx.redis.time()]);
  const live = liveAnnouncements(catalog, redisTimeMs(time.map(String)));
  if (live.length > 0) {
    const announced = live.flatMap((a) => a.tools);
    return { names: new Set(announced.map((t) => t.name)), announced };
  }
  const local = await localRegistry(ctx.config, env);
  if (local.problems.length > 0) return { problems: local.problems };
  return { names: local.registry.names(), announced: [] };
}

/**
 * The workflows in force, for an apply that names none: the published version's, or, while no published
 * version carries workflows, the local workflows file the processes read.
 */
function carriedWorkflows(
  inForce: { version: number; document: string } | undefined,
  localFile: string | undefined,
): { workflows: WorkflowsSource; from: string } {
  const doc = inForce ? (JSON.parse(inForce.document) as { workflows?: unknown }) : undefined;
  if (inForce && doc?.workflows !== undefined)
    return {
      workflows: {
        document: { workflows: doc.workflows },
        label: `the workflows kept from configuration version ${inForce.version}`,
      },
      from: `kept from version ${inForce.version}`,
    };
  return {
    workflows: { file: localFile },
    from: localFile ? `${localFile}, the workflows file in force` : 'no workflows file',
  };
}

/** A providers file as a version carries it: its declarations and prices, not where it was read. */
function providersDocument(file: ProvidersFile): {
  providers: ProviderSpec[];
  prices: ProvidersFile['prices'];
} {
  return { providers: [...file.providers], prices: file.prices };
}

/**
 * The providers a new version carries, in order: those the agents document itself declares (a
 * `providers` key, as `config show` prints a version: checked with the document), `--providers`, the
 * version in force's, else the local providers file (`PROVIDERS_FILE` or providers.yaml beside the agents
 * file). None of these: the version carries none and each scheduler keeps its local file.
 */
function versionProviders(
  doc: unknown,
  file: string,
  providersFile: string | undefined,
  inForce: { version: number; document: string } | undefined,
  config: CliContext['config'],
): { file?: ProvidersFile; from: string } | { problems: string[] } {
  const parse = (text: string, label: string, from: string) => {
    try {
      return { file: parseProviders(text, label), from };
    } catch (err) {
      const e = err as AgentReachError;
      return { problems: e.details?.length ? [...e.details] : [e.message] };
    }
  };
  const own = (doc as { providers?: unknown } | null)?.providers;
  if (own !== undefined) return parse(JSON.stringify(own), `${file}: providers`, file);
  if (providersFile !== undefined) {
    try {
      return parse(readFileSync(providersFile, 'utf8'), providersFile, providersFile);
    } catch (err) {
      return { problems: [`${providersFile}: cannot read providers file: ${(err as Error).message}`] };
    }
  }
  const carried = inForce ? (JSON.parse(inForce.document) as { providers?: unknown }).providers : undefined;
  if (inForce && carried !== undefined)
    return parse(
      JSON.stringify(carried),
      `the providers kept from configuration version ${inForce.version}`,
      `kept from version ${inForce.version}`,
    );
  const local = providersFileOf(config);
  if (local === undefined) return { from: 'none' };
  try {
    return parse(readFileSync(local, 'utf8'), local, `${local}, the providers file in force`);
  } catch (err) {
    return { problems: [`${local}: cannot read providers file: ${(err as Error).message}`] };
  }
}
