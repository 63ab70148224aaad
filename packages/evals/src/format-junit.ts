import type { EvalReport } from '@agent-reach/protocol';

const xml = (s: string) =>
  s
    // Characters XML 1.0 cannot carry at all.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');

/**
 * The report as JUnit XML: a test suite per variant, a test case per case and attempt (`case#2` for the
 * second repeat), a failure naming every check that failed.
 */
export function formatJunit(report: EvalReport): string {
  const suites = report.variants.map((v) => {
    const tests = v.cases.flatMap((c) =>
      c.attempts.map((a, i) => {
        const name = report.repeat > 1 ? `${c.id}#${i + 1}` : c.id;
        const time = (a.latency_ms / 1000).toFixed(3);
        const open = `    <testcase classname="${xml(`${report.dataset.name}.${v.name}`)}" name="${xml(name)}" time="${time}">`;
        const props = a.run_id ? `\n      <system-out>run ${xml(a.run_id)}</system-out>` : '';
        if (a.passed) return `${open}${props}\n    </testcase>`;
        const message = a.failures.map((f) => `${f.check}: ${f.message}`).join('\n');
        const first = a.failures[0];
        return `${open}\n      <failure message="${xml(first ? `${first.check}: ${first.message}` : 'failed')}" type="${xml(first?.check ?? 'failed')}">${xml(message)}</failure>${props}\n    </testcase>`;
      }),
    );
    const failures = v.cases.flatMap((c) => c.attempts).filter((a) => !a.passed).length;
    const time = v.cases.flatMap((c) => c.attempts).reduce((s, a) => s + a.latency_ms, 0) / 1000;
    return `  <testsuite name="${xml(`${report.dataset.name}.${v.name}`)}" tests="${tests.length}" failures="${failures}" errors="0" time="${time.toFixed(3)}" timestamp="${xml(report.started_at)}">\n${tests.join('\n')}\n  </testsuite>`;
  });
  const all = report.variants.flatMap((v) => v.cases.flatMap((c) => c.attempts));
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="${xml(`eval ${report.id}`)}" tests="${all.length}" failures="${all.filter((a) => !a.passed).length}">\n${suites.join('\n')}\n</testsuites>\n`;
}
