import { readFileSync } from 'node:fs';
import { createKeys, type AgentReachError } from '@agent-reach/protocol';
import {
  liveAnnouncements,
  parseAgents,
  publishConfig,
  readPublishedConfig,
  redisTimeMs,
} from '@agent-reach/shared';
import { localRegistry } from './config-check.js';
import type { CliContext } from './context.js';

/** What `config apply` did: the version published, or the problems that refused the file. */
export type ApplyOutcome =
  | { published: true; version: number }
  | { published: false; problems: string[]; inForce: number | undefined };

/**
 * Validates an agents file and publishes it as the fleet's next configuration version. The tools it names
 * are checked against the live executors' catalog (or, with no executor live, against the tools an
 * executor started with this environment would register). A file with any problem is refused as a
 * whole, every problem listed, and the version in force stays.
 */
export async function configApply(
  ctx: CliContext,
  env: Record<string, string | undefined>,
  file: string,
): Promise<ApplyOutcome> {
  const keys = createKeys(ctx.config.keyPrefix);
  const inForce = (await readPublishedConfig(ctx.redis, keys))?.version;
  const refuse = (problems: string[]): ApplyOutcome => ({ published: false, problems, inForce });
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return refuse([`${file}: cannot read agents file: ${(err as Error).message}`]);
  }
  const [catalog, time] = await Promise.all([ctx.redis.hgetall(keys.catalog), ctx.redis.time()]);
  const live = liveAnnouncements(catalog, redisTimeMs(time.map(String)));
  let known: Iterable<string>;
  if (live.length > 0) {
    known = new Set(live.flatMap((a) => a.tools.map((t) => t.name)));
  } else {
    const local = await localRegistry(ctx.config, env);
    if (local.problems.length > 0) return refuse(local.problems);
    known = local.registry.names();
  }
  let document;
  try {
    document = parseAgents(text, file, known).document;
  } catch (err) {
    const e = err as AgentReachError;
    return refuse(e.details?.length ? [...e.details] : [e.message]);
  }
  const version = await publishConfig(ctx.redis, keys, document, `config apply ${file}`);
  return { published: true, version };
}
