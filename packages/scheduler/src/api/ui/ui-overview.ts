import { Queue } from 'bullmq';
import { foldStateRecord, isFinalStatus } from '@agent-reach/protocol';
import type { RunState } from '../../agent-loop/run-state.js';
import type { RunSummary } from '../../runs/run-store.js';
import { searchRuns } from '../../runs/run-search.js';
import type { Principal } from '../auth.js';
import { UI_OVERVIEW_MINUTES, UI_TOOL_STATS_RUNS } from '../constants.js';
import type { ApiContext } from '../options.js';
import { visibleRuns } from '../session-access.js';
import { withinRedisTimeout } from '../unavailable.js';
import { mcpServers, providerBreakers, visibleProviders, visibleServer } from './ui-reach.js';

type Steps = Pick<RunState, 'steps' | 'approvals'>;

/** A recent run the caller may see, with the steps and approvals of its state when it has one. */
interface RecentRun {
  summary: RunSummary;
  state: Steps | undefined;
}

/** The newest runs the caller may see (its agents, tenants and sessions), with their steps. */
export async function recentRuns(ctx: ApiContext, principal: Principal): Promise<RecentRun[]> {
  const page = await searchRuns(ctx.deps.redis, ctx.deps.keys, {
    ...(principal.agents ? { agents: principal.agents } : {}),
    tenants: principal.tenants,
    limit: UI_TOOL_STATS_RUNS,
  });
  const shown = await visibleRuns(ctx, principal, page.runs);
  // One GET each, sent together: every run's keys are in a slot of their own on a cluster.
  const states = await Promise.all(shown.map((r) => ctx.deps.redis.get(ctx.deps.keys.runState(r.runId))));
  return shown.map((summary, i) => {
    const json = states[i];
    return {
      summary,
      state: typeof json === 'string' ? (foldStateRecord(json) as unknown as Steps) : undefined,
    };
  });
}

/** True when the call was answered by a person's rejection: a decision, not a failure of the tool. */
const rejectedByPerson = (state: Steps, toolCallId: string) =>
  state.approvals?.[toolCallId]?.decision === 'rejected';

interface ToolTally {
  calls: number;
  errors: number;
  rejected: number;
  error_kinds: Record<string, number>;
  durations: number[];
}

/** Calls, errors (a person's rejection counted apart, not as an error) and durations per tool. */
function tallyTools(runs: RecentRun[]): Map<string, ToolTally> {
  const tools = new Map<string, ToolTally>();
  for (const { state } of runs) {
    for (const s of state?.steps ?? []) {
      const t = tools.get(s.tool) ?? { calls: 0, errors: 0, rejected: 0, error_kinds: {}, durations: [] };
      t.calls += 1;
      if (rejectedByPerson(state!, s.tool_call_id)) t.rejected += 1;
      else if (!s.ok) {
        t.errors += 1;
        const kind = s.error_kind ?? 'error';
        t.error_kinds[kind] = (t.error_kinds[kind] ?? 0) + 1;
      }
      if (s.answered !== 'local') t.durations.push(s.duration_ms);
      tools.set(s.tool, t);
    }
  }
  return tools;
}

const byName = <T extends { tool?: string; agent?: string }>(a: T, b: T) =>
  (a.tool ?? a.agent ?? '') < (b.tool ?? b.agent ?? '') ? -1 : 1;

/** `/ui/api/tool-stats`: per tool, calls, errors and their kinds, and calls a person rejected. */
export function toolStats(runs: RecentRun[]) {
  return {
    runs: runs.length,
    tools: [...tallyTools(runs)].map(([tool, { durations: _, ...t }]) => ({ tool, ...t })).sort(byName),
  };
}

/** The p-th percentile (nearest rank) of some values; undefined without any. */
export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const latency = (values: number[]) => ({
  count: values.length,
  ...(values.length ? { p50_ms: percentile(values, 50), p95_ms: percentile(values, 95) } : {}),
});

/** Counts of a run queue or tool queue, as BullMQ keeps them. */
async function depth(queue: Queue) {
  const c = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed');
  const n = (state: string) => c[state] ?? 0;
  return {
    waiting: n('waiting') + n('prioritized'),
    active: n('active'),
    delayed: n('delayed'),
    failed: n('failed'),
  };
}

/**
 * `/ui/api/overview`: what the overview page charts, from the platform's own records: the caller's recent
 * runs (runs per minute by outcome, run and tool latency, error rates per tool and per agent), the fleet's
 * tool breakers, this scheduler's model provider breakers, the MCP servers the executors report, and the
 * depth of the run queue and of each tool group's queue.
 */
export function overviewReader(ctx: ApiContext) {
  const toolQueues = new Map<string, Queue>();
  const queueOf = (name: string) => {
    let q = toolQueues.get(name);
    if (!q) {
      q = new Queue(name, { connection: ctx.deps.redis, prefix: ctx.deps.keys.queuePrefix(name) });
      toolQueues.set(name, q);
    }
    return q;
  };

  const read = async (principal: Principal, now = Date.now()) => {
    const { runner, keys, control } = ctx.deps;
    const [runs, [, breakers, servers], providers] = await Promise.all([
      recentRuns(ctx, principal),
      withinRedisTimeout(
        Promise.all([runner.catalog.refresh(), runner.breakers.all(), mcpServers(ctx.deps.redis, keys)]),
        ctx.options.redisTimeoutMs,
      ),
      providerBreakers(ctx.deps.metricsRegistry),
    ]);
    const limited = principal.agents;
    const providersSeen = limited && visibleProviders(ctx.deps.agents, limited);
    const groups = [
      ...new Set(
        runner.catalog
          .names()
          .filter((n) => !principal.agents || visibleTool(ctx, principal, n))
          .map((n) => runner.catalog.group(n)),
      ),
    ].sort();
    const depths = await Promise.all([
      depth(control.queue),
      ...groups.map((g) => depth(queueOf(keys.toolQueue(g)))),
    ]);

    const minute = 60_000;
    const first = Math.floor(now / minute) * minute - (UI_OVERVIEW_MINUTES - 1) * minute;
    const perMinute = Array.from({ length: UI_OVERVIEW_MINUTES }, (_, i) => ({
      at: first + i * minute,
      counts: {} as Record<string, number>,
    }));
    const agents = new Map<string, { runs: number; failed: number; calls: number; errors: number }>();
    const runDurations: number[] = [];
    for (const { summary: s, state } of runs) {
      const final = isFinalStatus(s.status);
      // A finished run counts in the minute it ended, a running one in the minute it started.
      const at = final && s.updatedAt ? s.updatedAt : s.createdAt;
      const slot = perMinute[Math.floor((at - first) / minute)];
      if (slot) slot.counts[s.status] = (slot.counts[s.status] ?? 0) + 1;
      if (final && s.updatedAt >= s.createdAt) runDurations.push(s.updatedAt - s.createdAt);
      const a = agents.get(s.agent) ?? { runs: 0, failed: 0, calls: 0, errors: 0 };
      a.runs += 1;
      if (final && s.status !== 'succeeded') a.failed += 1;
      for (const step of state?.steps ?? []) {
        a.calls += 1;
        if (!step.ok && !rejectedByPerson(state!, step.tool_call_id)) a.errors += 1;
      }
      agents.set(s.agent, a);
    }
    const tools = tallyTools(runs);
    return {
      runs: runs.length,
      minutes: perMinute,
      run_latency: latency(runDurations),
      tool_latency: latency([...tools.values()].flatMap((t) => t.durations)),
      tools: [...tools]
        .map(([tool, t]) => ({
          tool,
          calls: t.calls,
          errors: t.errors,
          rejected: t.rejected,
          ...latency(t.durations),
        }))
        .sort(byName),
      agents: [...agents].map(([agent, a]) => ({ agent, ...a })).sort(byName),
      breakers: breakers
        .filter((b) => !principal.agents || visibleTool(ctx, principal, b.tool))
        .map((b) => ({
          tool: b.tool,
          state: b.state,
          ...(b.state === 'open' && b.openUntil !== undefined ? { open_until: b.openUntil } : {}),
        }))
        .sort(byName),
      provider_breakers: providers.filter((p) => !providersSeen || providersSeen.has(p.provider)),
      mcp_servers: servers.filter((s) => !limited || visibleServer(ctx.deps.agents, limited, s.name)),
      queues: [
        { queue: keys.runsQueue, ...depths[0]! },
        ...groups.map((g, i) => ({ queue: keys.toolQueue(g), group: g, ...depths[i + 1]! })),
      ],
    };
  };
  const close = () => Promise.all([...toolQueues.values()].map((q) => q.close()));
  return { read, close };
}

/** A key limited to some agents sees the breakers of their tools only. */
function visibleTool(ctx: ApiContext, principal: Principal, tool: string): boolean {
  for (const a of ctx.deps.agents.agents.values())
    if (principal.agents!.has(a.name) && a.tools.includes(tool)) return true;
  return false;
}
