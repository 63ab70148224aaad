import type { Keys } from '@agent-reach/protocol';
import type { Logger, McpServerSpec, RedisClient, WithdrawnTool } from '@agent-reach/shared';
import type { ListedMcpTool } from './mcp-tools.js';

/** A listed tool that passed the other checks, with its platform name and digest. */
export interface PinCandidate {
  tool: ListedMcpTool;
  name: string;
  digest: string;
}

/** What checking pins needs: the fleet's pins in Redis, the server's spec, and what was reported. */
export interface PinCheck {
  redis: RedisClient;
  keys: Keys;
  logger: Logger;
  spec: McpServerSpec;
  /** Digest changes already reported (`name:digest`), so the log says each once. */
  reported: Set<string>;
}

/**
 * Keeps the tools whose digest matches their pin: the configuration's `pinned` entry, else the fleet's
 * first-seen digest (set now when there is none). A changed one is added to `refused` and reported.
 */
export async function checkPins(
  check: PinCheck,
  candidates: PinCandidate[],
  refused: WithdrawnTool[],
): Promise<PinCandidate[]> {
  const { redis, keys, logger, spec } = check;
  if (candidates.length === 0) return [];
  const configured = (tool: string) =>
    spec.pinned !== undefined && Object.hasOwn(spec.pinned, tool) ? spec.pinned[tool] : undefined;
  const pipeline = redis.pipeline();
  for (const c of candidates) {
    const pin = configured(String(c.tool.name));
    // A digest a configuration accepted becomes the fleet's pin, so that it outlives the entry.
    if (pin === c.digest) pipeline.hset(keys.mcpPins, c.name, pin);
    else if (pin === undefined) pipeline.hsetnx(keys.mcpPins, c.name, c.digest);
  }
  pipeline.hmget(keys.mcpPins, ...candidates.map((c) => c.name));
  const replies = (await pipeline.exec()) ?? [];
  const [err, fleet] = replies[replies.length - 1] ?? [];
  if (err) throw err;
  const accepted: PinCandidate[] = [];
  candidates.forEach((c, i) => {
    const pin = configured(String(c.tool.name)) ?? (fleet as Array<string | null>)[i] ?? c.digest;
    if (pin === c.digest) return void accepted.push(c);
    refused.push({
      name: c.name,
      server: spec.name,
      reason: 'digest_changed',
      message: `server "${spec.name}": tool "${c.tool.name}" changed its description, schema or annotations since digest ${pin} was pinned; hidden until a configuration pins ${c.digest}`,
      digest: c.digest,
      pinned: pin,
    });
    if (!check.reported.has(`${c.name}:${c.digest}`)) {
      check.reported.add(`${c.name}:${c.digest}`);
      logger.warn(
        { security: true, server: spec.name, tool: c.name, pinned: pin, digest: c.digest },
        'MCP tool changed since it was pinned; hidden',
      );
    }
  });
  return accepted;
}
