import { INVARIANTS, type Invariant } from './fault-check.js';
import type { FaultReport } from './run-scenario.js';

/** The report as text: figures, violations per invariant, and up to `examples` violations named. */
export function formatReport(report: FaultReport, examples = 10): string {
  const lines = [
    `${report.scenario}: ${report.title}`,
    `  runs: ${report.runs}; statuses: ${Object.entries(report.statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ];
  for (const [k, v] of Object.entries(report.figures)) lines.push(`  ${k}: ${v}`);
  const invariants = Object.keys(report.counts) as Invariant[];
  if (invariants.length === 0) lines.push('  violations: none');
  // Examples spread over the invariants, so that a frequent one does not hide the others.
  const each = Math.max(2, Math.floor(examples / Math.max(1, invariants.length)));
  for (const inv of invariants) {
    lines.push(
      `  VIOLATED ${inv} (${INVARIANTS[inv]}): ${report.counts[inv]} violations in ${report.runsViolating[inv]} runs/processes`,
    );
    const mine = report.violations.filter((v) => v.invariant === inv);
    for (const v of mine.slice(0, each)) lines.push(`    - ${v.subject}: ${v.detail}`);
    if (mine.length > each) lines.push(`    … and ${mine.length - each} more`);
  }
  return lines.join('\n');
}
