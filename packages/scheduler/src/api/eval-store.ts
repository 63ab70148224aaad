import type { EvalReport, EvalSummary, Keys } from '@agent-reach/protocol';
import { constants, type RedisClient } from '@agent-reach/shared';

/** A stored report and the tenant it belongs to. */
interface StoredEval {
  tenant: string;
  report: EvalReport;
}

/** Most evals `GET /v1/evals` lists, newest first. */
export const MAX_EVAL_LIST = 200;
/** Reports a tenant keeps: storing one more drops its oldest (a key could otherwise fill Redis with them). */
export const MAX_EVALS_PER_TENANT = 200;

/**
 * Eval reports in Redis (docs/evals.md): one string per report and a sorted set per tenant, both expiring
 * with the run retention (7 days by default), as the runs they link to do.
 */
export class EvalStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly retentionS: number = constants.DEFAULT_RUN_RETENTION_S,
  ) {}

  /**
   * Stores a report under an id no report holds, in one command, so that of two tenants storing one id at
   * once only one gets it; false when a report holds the id (see `put` to replace it).
   */
  async create(tenant: string, report: EvalReport, now = Date.now()): Promise<boolean> {
    const value = JSON.stringify({ tenant, report });
    const set = await this.redis.set(this.keys.evalReport(report.id), value, 'EX', this.retentionS, 'NX');
    if (set === null) return false;
    await this.#list(tenant, report.id, now);
    return true;
  }

  /** Stores a report, replacing the one its id holds (whose owner the caller has checked). */
  async put(tenant: string, report: EvalReport, now = Date.now()): Promise<void> {
    await this.redis.set(
      this.keys.evalReport(report.id),
      JSON.stringify({ tenant, report }),
      'EX',
      this.retentionS,
    );
    await this.#list(tenant, report.id, now);
  }

  /**
   * Lists a stored report in its tenant's index. The report and the index are on two slots: written one
   * after the other, the index last, so a listed id always has its report (a report without its listing
   * expires with the retention).
   */
  async #list(tenant: string, id: string, now: number): Promise<void> {
    const index = this.keys.evalIndex(tenant);
    await this.redis.zadd(index, now, id);
    await this.redis.zremrangebyscore(index, '-inf', now - this.retentionS * 1000);
    await this.redis.expire(index, this.retentionS);
    const excess = (await this.redis.zcard(index)) - MAX_EVALS_PER_TENANT;
    if (excess <= 0) return;
    const dropped = await this.redis.zpopmin(index, excess);
    // Member, score, member, score…: each report is on a slot of its own, so one at a time.
    for (let i = 0; i < dropped.length; i += 2) {
      const old = dropped[i] as string;
      if ((await this.read(old))?.tenant === tenant) await this.redis.del(this.keys.evalReport(old));
    }
  }

  async get(id: string): Promise<StoredEval | undefined> {
    return this.read(id);
  }

  /** The evals of some tenants that `visible` lets through (by their agents), newest first, as listed. */
  async list(
    tenants: Iterable<string>,
    visible: (agents: readonly string[] | undefined) => boolean,
    limit = MAX_EVAL_LIST,
  ): Promise<EvalSummary[]> {
    const ids: { id: string; at: number }[] = [];
    for (const tenant of tenants) {
      const page = await this.redis.zrevrange(this.keys.evalIndex(tenant), 0, limit - 1, 'WITHSCORES');
      for (let i = 0; i + 1 < page.length; i += 2)
        ids.push({ id: page[i] as string, at: Number(page[i + 1]) });
    }
    ids.sort((a, b) => b.at - a.at);
    const stored = await Promise.all(ids.slice(0, limit).map(({ id }) => this.read(id)));
    return stored.flatMap((s) => (s && visible(s.report.dataset.agents) ? [summary(s.report)] : []));
  }

  private async read(id: string): Promise<StoredEval | undefined> {
    const text = await this.redis.get(this.keys.evalReport(id));
    return text ? (JSON.parse(text) as StoredEval) : undefined;
  }
}

function summary(r: EvalReport): EvalSummary {
  return {
    id: r.id,
    dataset: r.dataset.name,
    started_at: r.started_at,
    finished_at: r.finished_at,
    variants: r.variants.map((v) => ({ name: v.name, reach_success: v.metrics.reach_success })),
  };
}
