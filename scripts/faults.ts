/**
 * The long version of the fault-injection suite (test/faults.test.ts): every scenario (or those named)
 * with hundreds of runs, as many rounds as asked, figures printed per round and in total.
 *
 *   pnpm faults [--runs 300] [--rounds 1] [--scenario id,id] [--settle-ms 180000] [--quiet-ms 15000]
 *               [--oom-ms 8000] [--archive on|off] [--postgres-url postgres://…]
 *   pnpm faults --list
 *
 * Scenario ids: see --list; `baseline` (no fault) is a control. `--oom-ms` sets how long Redis stays
 * at maxmemory in `redis-out-of-memory`. With `--archive on` (the default) every scenario runs with the
 * run archive: a database of its own on the PostgreSQL of `--postgres-url` (default the machine's,
 * 127.0.0.1:5432), an archiver in the fleet, and the archive's invariants checked. The archive's own
 * scenarios (a pause between a run's hand-off and its final checkpoint, PostgreSQL killed (on a server of
 * their own, made with initdb), archivers killed at random, text PostgreSQL cannot hold) always run with
 * it, and read the runs Redis holds throughout the fault. `callback-receiver-killed` (a callback receiver
 * killed mid-load) and `schedule-scheduler-killed` (a scheduler killed while a schedule fires) check
 * their own invariants besides the runs'. Exit code 1 when any invariant was violated.
 */
import { parseArgs } from 'node:util';
import {
  ARCHIVE_SCENARIOS,
  BASELINE,
  cleanupAll,
  DEFAULT_POSTGRES_URL,
  formatReport,
  INVARIANTS,
  outOfMemory,
  runFaultScenario,
  SCENARIOS,
  type FaultReport,
  type Invariant,
} from '@agent-reach/faults';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '1' },
    scenario: { type: 'string' },
    'settle-ms': { type: 'string', default: '180000' },
    'quiet-ms': { type: 'string', default: '15000' },
    examples: { type: 'string', default: '10' },
    'oom-ms': { type: 'string', default: '8000' },
    archive: { type: 'string', default: 'on' },
    'postgres-url': { type: 'string', default: DEFAULT_POSTGRES_URL },
    list: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const positive = (name: string, raw: string | undefined): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a positive integer`);
    process.exit(2);
  }
  return n;
};
const oomMs = positive('oom-ms', values['oom-ms']);
const scenarios = [...SCENARIOS, ...ARCHIVE_SCENARIOS];
const all = [...scenarios.map((s) => (s.id === 'redis-out-of-memory' ? outOfMemory(oomMs) : s)), BASELINE];

if (values.help || values.list) {
  if (values.help)
    console.log(
      'pnpm faults [--runs 300] [--rounds 1] [--scenario id,id] [--settle-ms 180000] [--quiet-ms 15000] [--examples 10] [--oom-ms 8000] [--archive on|off] [--postgres-url URL]',
    );
  for (const s of all) console.log(`${s.id.padEnd(26)} ${s.title}`);
  process.exit(0);
}

const runs = positive('runs', values.runs);
const rounds = positive('rounds', values.rounds);
const settleMs = positive('settle-ms', values['settle-ms']);
const quietMs = positive('quiet-ms', values['quiet-ms']);
const examples = positive('examples', values.examples);
if (values.archive !== 'on' && values.archive !== 'off') {
  console.error('--archive must be on or off');
  process.exit(2);
}
const postgresUrl = values.archive === 'on' ? values['postgres-url'] : undefined;
const wanted = values.scenario ? values.scenario.split(',').filter(Boolean) : scenarios.map((s) => s.id);
const unknown = wanted.filter((id) => !all.some((s) => s.id === id));
if (unknown.length > 0) {
  console.error(`unknown scenario(s): ${unknown.join(', ')} (see --list)`);
  process.exit(2);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: stopping every process of the suite`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

const totals = new Map<
  string,
  { runs: number; counts: Partial<Record<Invariant, number>>; rounds: number }
>();
let failed = false;
for (let round = 1; round <= rounds; round += 1) {
  for (const id of wanted) {
    const scenario = all.find((s) => s.id === id)!;
    const t0 = Date.now();
    let report: FaultReport;
    try {
      report = await runFaultScenario(scenario, { runs, settleMs, quietMs, postgresUrl });
    } catch (err) {
      failed = true;
      console.error(
        `round ${round} ${id}: the scenario could not be run: ${(err as Error).stack ?? String(err)}`,
      );
      continue;
    }
    console.log(
      `\n[round ${round}/${rounds}, ${((Date.now() - t0) / 1000).toFixed(1)} s] ${formatReport(report, examples)}`,
    );
    if (report.violations.length > 0) failed = true;
    const total = totals.get(id) ?? { runs: 0, counts: {}, rounds: 0 };
    total.runs += report.runs;
    total.rounds += 1;
    for (const [k, v] of Object.entries(report.counts) as Array<[Invariant, number]>)
      total.counts[k] = (total.counts[k] ?? 0) + v;
    totals.set(id, total);
  }
}

console.log('\nTotals');
for (const [id, t] of totals) {
  const counts = Object.entries(t.counts) as Array<[Invariant, number]>;
  console.log(
    `  ${id}: ${t.runs} runs in ${t.rounds} round(s); ${
      counts.length === 0 ? 'no violations' : counts.map(([k, v]) => `${k} ${v}`).join(', ')
    }`,
  );
}
console.log(
  `\nInvariants:\n${Object.entries(INVARIANTS)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join('\n')}`,
);
await cleanupAll();
process.exit(failed ? 1 : 0);
