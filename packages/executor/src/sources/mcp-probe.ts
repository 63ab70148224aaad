import type { Logger, McpServerSpec } from '@agent-reach/shared';
import { McpConnection } from './mcp-connection.js';
import { resolveMcpSourceOptions, type McpSourceOptions } from './mcp-source.js';

/** What one connection attempt to an MCP server found. */
export type McpProbeOutcome =
  { ok: true; tools: Array<{ name: string; description?: string }> } | { ok: false; error: string };

/**
 * Starts (stdio) or reaches (streamable HTTP) one MCP server as an executor would, lists its tools and
 * closes it: the first connection attempt decides, with no restart. `config check --probe` uses it.
 */
export async function probeMcpServer(
  spec: McpServerSpec,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
  options: McpSourceOptions = {},
): Promise<McpProbeOutcome> {
  const limits = resolveMcpSourceOptions(options);
  let settle!: (outcome: McpProbeOutcome) => void;
  const outcome = new Promise<McpProbeOutcome>((resolve) => (settle = resolve));
  const connection = new McpConnection({
    spec,
    env,
    // One attempt: the backoff before a second is longer than the probe waits.
    limits: { ...limits, restartBackoffMs: limits.restartBackoffMaxMs },
    logger,
    onTools: (tools) =>
      settle({
        ok: true,
        tools: tools.map((t) => ({
          name: String(t?.name),
          ...(typeof t?.description === 'string' ? { description: t.description } : {}),
        })),
      }),
    onDown: (why) => settle({ ok: false, error: why }),
    onProtocolError: () => undefined,
  });
  connection.start();
  try {
    return await outcome;
  } finally {
    await connection.close();
  }
}
