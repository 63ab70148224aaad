/**
 * The run archive on the machine's PostgreSQL, in a database of its own (created, migrated with the
 * package's own migrations, dropped):
 *   (a) runs archived per second through ArchiveStore.write (the archiver's batch write) against
 *       PostgreSQL's own COPY … FROM STDIN of the same rows;
 *   (b) bytes per archived run (table + indexes + TOAST of all partitions ÷ rows) against Redis's bytes
 *       per finished run (docs/capacity.md);
 *   (c) with BENCH_ARCHIVE_RUNS (default 500,000) synthetic runs generated in SQL over 30 days, p50/p99
 *       latency of each API filter through ArchiveStore.search, and whether its plan (EXPLAIN FORMAT
 *       JSON of searchQuery, the very SQL) uses an index.
 *   (d) Redis memory per finished run (MEMORY USAGE of its keys) with the archive on, BENCH_ARCHIVE_REDIS_RUNS
 *       (default 50) demo runs through a scheduler and executor in this process: finished and waiting in
 *       the outbox, archived (kept ARCHIVED_RUN_RETENTION_S, 3 s here), and once that expired.
 * Prints a table and writes bench/results/archive.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import {
  ArchiveStore,
  createPool,
  migrate,
  searchQuery,
  utcDay,
  type ArchiveRow,
  type Pool,
} from '@agent-reach/archive';
import type { ArchiveSearch } from '@agent-reach/protocol';
import { redisPerArchivedRun } from './archive-redis.js';
import { envInt } from './env.js';

const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WRITE_RUNS = envInt('BENCH_ARCHIVE_WRITE_RUNS', 4000, 100);
const BATCH = envInt('BENCH_ARCHIVE_BATCH', 200, 1);
const SEARCH_RUNS = envInt('BENCH_ARCHIVE_RUNS', 500_000, 1000);
const QUERIES = envInt('BENCH_ARCHIVE_QUERIES', 40, 5);
const REDIS_RUNS = envInt('BENCH_ARCHIVE_REDIS_RUNS', 50, 1);
const DAYS = 30;
const DAY_MS = 86_400_000;
/** Redis `used_memory` per finished run, from `pnpm bench:scale` (docs/capacity.md). */
const REDIS_BYTES_PER_RUN = 19_505;

const AGENTS = ['weather', 'travel', 'billing', 'support', 'hr', 'devops', 'research', 'sales'];
const TOOLS = ['query_weather', 'search_flights', 'book_hotel', 'send_email', 'lookup_invoice', 'run_sql'];
const STATUSES = [
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'completed',
  'failed',
  'cancelled',
];

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/** A finished run of three tool calls as the archiver reads it from Redis (sizes as a demo run's). */
function realisticRow(i: number, now: number): ArchiveRow {
  const runId = `run_${randomUUID().replaceAll('-', '')}`;
  const agent = AGENTS[i % AGENTS.length]!;
  const tools = [TOOLS[i % TOOLS.length]!, TOOLS[(i + 1) % TOOLS.length]!, TOOLS[(i + 3) % TOOLS.length]!];
  const created = now - (i % DAYS) * DAY_MS - 60_000;
  const finished = created + 4_000 + (i % 50) * 100;
  const traceId = randomUUID().replaceAll('-', '');
  const status = STATUSES[i % STATUSES.length]!;
  const metadata = { team: `team-${i % 20}`, workflow_id: `wf-${i % 1000}` };
  const meta: Record<string, string> = {
    runId,
    agent,
    status,
    reason: status,
    createdAt: String(created),
    updatedAt: String(finished),
    traceId,
    tenant: `tenant-${i % 10}`,
    tools: tools.join(','),
    errorKinds: status === 'failed' ? 'timeout' : '',
    metadata: JSON.stringify(metadata),
    final: '1',
    configVersion: '3',
    steps: '4',
    promptTokens: '2310',
    completionTokens: '412',
    input: '上海明天天气怎么样？帮我订一张周五去北京的机票，再订一晚酒店，并把行程发到我的邮箱。',
  };
  const calls = tools.map((name, k) => ({
    id: `call_${k}_${i}`,
    type: 'function',
    function: {
      name,
      arguments: JSON.stringify({ city: '上海', date: '2026-12-04', seq: k, note: 'x'.repeat(60) }),
    },
  }));
  const result = (k: number) =>
    JSON.stringify({
      ok: true,
      call: k,
      data: Array.from({ length: 8 }, (_, j) => ({ id: j, v: `value-${j}-${i}`, t: 21.5 + j })),
    });
  const messages: unknown[] = [
    {
      role: 'system',
      content: 'You are the agent of this deployment. Use the tools; answer briefly. '.repeat(4),
    },
    { role: 'user', content: meta.input },
    {
      role: 'assistant',
      content: null,
      tool_calls: calls,
      reasoning: 'Three independent lookups; call them together.',
    },
    ...calls.map((c, k) => ({ role: 'tool', tool_call_id: c.id, content: result(k) })),
    {
      role: 'assistant',
      content: '明天上海小雨，12–16 °C。已订周五航班与酒店，行程已发送到你的邮箱。'.repeat(2),
    },
  ];
  const events: Array<[string, unknown]> = [
    [`${created}-0`, { type: 'run_started', runId, agent }],
    [`${created + 1}-0`, { type: 'model_turn', step: 1, promptTokens: 820, completionTokens: 140 }],
    ...calls.flatMap((c, k): Array<[string, unknown]> => [
      [
        `${created + 10 + k}-0`,
        { type: 'tool_started', tool: c.function.name, callId: c.id, arguments: c.function.arguments },
      ],
      [
        `${created + 20 + k}-0`,
        {
          type: 'tool_result',
          tool: c.function.name,
          callId: c.id,
          attempts: 1,
          durationMs: 12 + k,
          executor: 'executor-1a2b',
          result: result(k),
        },
      ],
    ]),
    [`${finished - 1}-0`, { type: 'model_turn', step: 2, promptTokens: 1490, completionTokens: 272 }],
    [`${finished}-0`, { type: 'run_finished', status, steps: 4 }],
  ];
  return {
    run_id: runId,
    finished_ms: finished,
    created_ms: created,
    agent,
    status,
    reason: status,
    trace_id: traceId,
    tenant: meta.tenant!,
    session_id: i % 4 === 0 ? `sess-${i % 5000}` : null,
    workflow_id: metadata.workflow_id,
    config_version: 3,
    tools,
    error_kinds: status === 'failed' ? ['timeout'] : [],
    metadata,
    meta,
    state: {
      v: 2,
      runId,
      agent,
      step: 4,
      status,
      usage: { promptTokens: 2310, completionTokens: 412 },
      plan: tools,
    },
    messages,
    approvals: {},
    results: {},
    events,
  };
}

/** COPY text format: one field. */
const copyField = (v: unknown): string => {
  if (v === null || v === undefined) return '\\N';
  const s =
    Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? `{${v.join(',')}}`
      : typeof v === 'string'
        ? v
        : JSON.stringify(v);
  return s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
};

const COPY_COLUMNS =
  'run_id, finished_at, created_ms, agent, status, reason, trace_id, tenant, session_id, workflow_id, config_version, tools, error_kinds, metadata, meta, state, messages, approvals, results, events';

function copyRows(pool: Pool, rows: readonly ArchiveRow[]): Promise<void> {
  const body = rows
    .map((r) =>
      [
        r.run_id,
        new Date(r.finished_ms).toISOString(),
        r.created_ms,
        r.agent,
        r.status,
        r.reason,
        r.trace_id,
        r.tenant,
        r.session_id,
        r.workflow_id,
        r.config_version,
        r.tools,
        r.error_kinds,
        r.metadata,
        r.meta,
        r.state,
        r.messages,
        r.approvals,
        r.results,
        r.events,
      ]
        .map((v) => (typeof v === 'number' ? String(v) : copyField(v)))
        .join('\t'),
    )
    .join('\n');
  return copyIn(pool, `COPY archived_runs (${COPY_COLUMNS}) FROM STDIN`, `${body}\n`);
}

/**
 * COPY … FROM STDIN on a pooled connection, through pg's submittable protocol (what pg-copy-streams
 * does, without the dependency): the whole text sent in one CopyData stream.
 */
async function copyIn(pool: Pool, sql: string, data: string): Promise<void> {
  const client = await pool.connect();
  try {
    await new Promise<void>((resolve, reject) => {
      let failed: Error | undefined;
      const submittable = {
        submit: (con: { query(text: string): void }) => con.query(sql),
        handleCopyInResponse: (con: { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void }) => {
          con.sendCopyFromChunk(Buffer.from(data));
          con.endCopyFrom();
        },
        handleCommandComplete: () => undefined,
        handleError: (err: Error) => (failed = err),
        handleReadyForQuery: () => (failed ? reject(failed) : resolve()),
      };
      void client.query(submittable as never);
    });
  } finally {
    client.release();
  }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Whether a plan node tree scans any index (Index Scan, Index Only Scan, Bitmap Index Scan). */
function indexesUsed(plan: Record<string, unknown>, out = new Set<string>()): Set<string> {
  const type = String(plan['Node Type'] ?? '');
  if (/Index/.test(type) && typeof plan['Index Name'] === 'string')
    out.add(plan['Index Name'].replace(/^archived_runs_p\d{8}_/, ''));
  const seq = type === 'Seq Scan';
  if (seq) out.add('SEQ SCAN');
  for (const child of (plan.Plans as Array<Record<string, unknown>> | undefined) ?? [])
    indexesUsed(child, out);
  return out;
}

async function main(): Promise<void> {
  const name = `ar_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = createPool(POSTGRES_URL, { max: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = withDatabase(POSTGRES_URL, name);
  const pool = createPool(url, { max: 2, statementTimeoutMs: 600_000 });
  const started = Date.now();
  try {
    await migrate(url);
    const store = new ArchiveStore(pool);
    const now = Date.now();
    await store.ensurePartitions(Array.from({ length: DAYS + 1 }, (_, d) => utcDay(now - d * DAY_MS)));
    const rows = Array.from({ length: WRITE_RUNS }, (_, i) => realisticRow(i, now));

    // (a) the archiver's batch write against COPY, alternating, best of 2 rounds each.
    const writeRates: number[] = [];
    const copyRates: number[] = [];
    let bytesPerRun = 0;
    let jsonBytesPerRun = 0;
    // Empty partitions and indexes have a size of their own: counted out of bytes per run.
    const totalSize = async () =>
      Number(
        (
          await pool.query<{ bytes: string }>(
            "SELECT sum(pg_total_relation_size(relid)) AS bytes FROM pg_partition_tree('archived_runs')",
          )
        ).rows[0]!.bytes,
      );
    const emptyBytes = await totalSize();
    for (let round = 0; round < 2; round++) {
      await pool.query('TRUNCATE archived_runs');
      let t = performance.now();
      for (let i = 0; i < rows.length; i += BATCH) await store.write(rows.slice(i, i + BATCH));
      writeRates.push(rows.length / ((performance.now() - t) / 1000));
      if (round === 0) {
        await pool.query('VACUUM ANALYZE archived_runs');
        const size = await pool.query<{ bytes: string; n: string; json: string }>(
          `SELECT (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('archived_runs')) AS bytes,
                  (SELECT count(*) FROM archived_runs) AS n,
                  (SELECT avg(pg_column_size(meta) + pg_column_size(state) + pg_column_size(messages) + pg_column_size(events)) FROM archived_runs) AS json`,
        );
        bytesPerRun = (Number(size.rows[0]!.bytes) - emptyBytes) / Number(size.rows[0]!.n);
        jsonBytesPerRun = Number(size.rows[0]!.json);
      }
      await pool.query('TRUNCATE archived_runs');
      t = performance.now();
      for (let i = 0; i < rows.length; i += BATCH) await copyRows(pool, rows.slice(i, i + BATCH));
      copyRates.push(rows.length / ((performance.now() - t) / 1000));
    }
    const copyAll = performance.now();
    await pool.query('TRUNCATE archived_runs');
    await copyRows(pool, rows);
    const copyOneRate = rows.length / ((performance.now() - copyAll) / 1000);
    const rawJson = rows.reduce((n, r) => n + JSON.stringify(r).length, 0) / rows.length;
    const writeRate = Math.max(...writeRates);
    const copyRate = Math.max(...copyRates);

    // (c) many runs, generated in SQL: realistic listing fields, small record payloads (search reads
    // only run_id and meta, which are kept inline; the large columns are TOASTed and never read here).
    await pool.query('TRUNCATE archived_runs');
    const gen = performance.now();
    await pool.query(
      `INSERT INTO archived_runs (run_id, finished_at, created_ms, agent, status, reason, trace_id, tenant,
         session_id, workflow_id, config_version, tools, error_kinds, metadata, meta, state, messages, approvals, events)
       SELECT 'run_' || md5(g::text), to_timestamp(c / 1000.0) + interval '5 seconds', c,
         ($2::text[])[1 + h % 8], s, s, md5('t' || g), 'tenant-' || (g % 10),
         CASE WHEN g % 4 = 0 THEN 'sess-' || (g % 20000) END, 'wf-' || (g % 50000), 3,
         ARRAY[($3::text[])[1 + (h / 8) % 6], ($3::text[])[1 + (h / 48) % 6]],
         CASE WHEN s = 'failed' THEN ARRAY[(ARRAY['timeout','tool_error','rate_limited'])[1 + (h / 288) % 3]] ELSE '{}' END,
         jsonb_build_object('team', 'team-' || ((h / 864) % 20), 'workflow_id', 'wf-' || (g % 50000)),
         jsonb_build_object('runId', 'run_' || md5(g::text), 'agent', ($2::text[])[1 + h % 8], 'status', s,
           'createdAt', c::text, 'updatedAt', (c + 5000)::text, 'tenant', 'tenant-' || (g % 10), 'final', '1',
           'input', '上海明天天气怎么样？帮我订一张周五去北京的机票', 'steps', '4'),
         '{}', '[]', '{}', '[]'
       FROM (SELECT g, ($4::bigint - (random() * ($5::bigint - 3600000))::bigint) AS c,
               (ARRAY['completed','completed','completed','completed','completed','completed','failed','cancelled'])[1 + (h / 17280) % 8] AS s, h
             FROM (SELECT g, abs(hashtext(g::text)) AS h FROM generate_series(1, $1::int) g) gh) x`,
      [SEARCH_RUNS, AGENTS, TOOLS, now - 3_600_000, DAYS * DAY_MS],
    );
    await pool.query('VACUUM ANALYZE archived_runs');
    const genS = (performance.now() - gen) / 1000;
    const sample = (
      await pool.query<{ trace_id: string; session_id: string }>(
        `SELECT trace_id, session_id FROM archived_runs WHERE session_id IS NOT NULL AND tenant = 'tenant-4' LIMIT 1`,
      )
    ).rows[0]!;
    const tenants = new Set(['tenant-4']);
    const base = { tenants, limit: 51 };
    const filters: Array<[string, ArchiveSearch]> = [
      ['listing (tenant only)', base],
      ['agent', { ...base, agents: new Set(['billing']) }],
      ['status', { ...base, status: 'cancelled' }],
      ['since/until (1 day)', { ...base, since: now - 10 * DAY_MS, until: now - 9 * DAY_MS }],
      ['trace_id', { ...base, traceId: sample.trace_id }],
      ['tool', { ...base, tool: 'run_sql' }],
      ['error_kind', { ...base, errorKind: 'rate_limited' }],
      ['metadata', { ...base, metadata: { team: 'team-13' } }],
      ['session', { ...base, sessionId: sample.session_id }],
      ['workflow', { ...base, workflowId: 'wf-4244' }],
      ['next page (cursor)', { ...base, after: { createdMs: now - 5 * DAY_MS, runId: 'run_' } }],
    ];
    const results = [];
    for (const [label, q] of filters) {
      const { text, values } = searchQuery(q);
      const plan = (
        await pool.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, unknown> }> }>(
          `EXPLAIN (FORMAT JSON) ${text}`,
          values,
        )
      ).rows[0]!['QUERY PLAN'][0]!.Plan;
      const used = indexesUsed(plan);
      const times: number[] = [];
      let found = 0;
      for (let i = 0; i < QUERIES; i++) {
        const t = performance.now();
        found = (await store.search(q)).length;
        times.push(performance.now() - t);
      }
      const indexes = [...used].filter((u) => u !== 'SEQ SCAN');
      results.push({
        filter: label,
        rows: found,
        p50Ms: pct(times, 50),
        p99Ms: pct(times, 99),
        indexes: [...new Set(indexes.map((n) => n.replace(/^archived_runs_p\d+_/, '')))],
        seqScan: used.has('SEQ SCAN'),
        indexMet: indexes.length > 0 && !used.has('SEQ SCAN'),
      });
    }
    // (d) what a finished run keeps in Redis around its hand-off to the archive (real demo runs).
    const redisFigures = await redisPerArchivedRun(url, REDIS_RUNS);
    const load = (await import('node:os')).loadavg()[0]!;
    const f = (n: number, d = 0) =>
      n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
    console.log(
      `run archive on PostgreSQL (database ${name}, load ${load.toFixed(1)}, ${(await import('node:os')).cpus().length} cores)\n`,
    );
    console.log(
      `(a) ${f(WRITE_RUNS)} realistic runs (3 tool calls, ${f(rawJson)} B of JSON each), batches of ${BATCH}`,
    );
    console.log(
      `    ArchiveStore.write: ${f(writeRate)} runs/s   COPY (same batches): ${f(copyRate)} runs/s   ratio ${(writeRate / copyRate).toFixed(2)}×`,
    );
    console.log(
      `    COPY of all ${f(WRITE_RUNS)} in one statement: ${f(copyOneRate)} runs/s (write/COPY ${(writeRate / copyOneRate).toFixed(2)}×)`,
    );
    console.log(
      `(b) bytes per archived run (table + TOAST + indexes): ${f(bytesPerRun)} B (jsonb ${f(jsonBytesPerRun)} B)  vs Redis ${f(REDIS_BYTES_PER_RUN)} B per finished run: ${(bytesPerRun / REDIS_BYTES_PER_RUN).toFixed(2)}×`,
    );
    console.log(
      `(c) ${f(SEARCH_RUNS)} runs over ${DAYS} days, 10 tenants, 8 agents, 6 tools (generated in ${genS.toFixed(1)} s); ${QUERIES} queries each, tenant-4, limit 51\n`,
    );
    console.log(
      `${'filter'.padEnd(24)}${'rows'.padStart(6)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}  index   indexes`,
    );
    for (const r of results)
      console.log(
        `${r.filter.padEnd(24)}${String(r.rows).padStart(6)}${r.p50Ms.toFixed(2).padStart(9)}${r.p99Ms.toFixed(2).padStart(9)}  ${(r.indexMet ? 'met' : 'NOT met').padEnd(8)}${r.indexes.join(', ')}${r.seqScan ? ' + Seq Scan' : ''}`,
      );
    const r = redisFigures;
    console.log(
      `\n(d) Redis per finished run, ${r.runs} demo runs (weather lookup + Markdown file, llm-sim), MEMORY USAGE of its keys:`,
    );
    console.log(
      `    finished, waiting for the archiver: ${f(r.finishedBytes)} B (${Object.entries(r.perKey)
        .map(([k, v]) => `${k} ${f(v)}`)
        .join('; ')}) + outbox ${f(r.outboxBytesPerRun)} B`,
    );
    console.log(
      `    archived: ${f(r.archivedBytes)} B for ARCHIVED_RUN_RETENTION_S (TTL ${r.ttlAfterArchiveS} s here, ${r.archivedRetentionS} s asked; 300 s by default), outbox entry gone`,
    );
    console.log(`    after that TTL: ${f(r.expiredBytes)} B per run left in Redis`);
    const report = {
      when: new Date().toISOString(),
      load1: load,
      write: {
        runs: WRITE_RUNS,
        batch: BATCH,
        jsonBytesPerRunSent: rawJson,
        archiveWriteRunsPerS: writeRate,
        copyRunsPerS: copyRate,
        ratio: writeRate / copyRate,
        copyOneStatementRunsPerS: copyOneRate,
        rounds: { write: writeRates, copy: copyRates },
      },
      size: {
        bytesPerRun,
        jsonbBytesPerRun: jsonBytesPerRun,
        redisBytesPerRun: REDIS_BYTES_PER_RUN,
        ratio: bytesPerRun / REDIS_BYTES_PER_RUN,
      },
      search: { runs: SEARCH_RUNS, days: DAYS, generateS: genS, queries: QUERIES, filters: results },
      redis: redisFigures,
      seconds: (Date.now() - started) / 1000,
    };
    await mkdir('bench/results', { recursive: true });
    await writeFile('bench/results/archive.json', `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote bench/results/archive.json (${report.seconds.toFixed(0)} s)`);
    if (results.some((r) => !r.indexMet)) process.exitCode = 1;
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
