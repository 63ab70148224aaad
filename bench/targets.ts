/** A benchmark target: a measured figure (usually a ratio) against its limit, met or not. */
export interface Target {
  name: string;
  value: number;
  op: '<=' | '>=';
  limit: number;
  unit: string;
  met: boolean;
}

export function target(name: string, value: number, op: Target['op'], limit: number, unit = '×'): Target {
  const met = op === '<=' ? value <= limit : value >= limit;
  return { name, value, op, limit, unit, met };
}

export function formatTarget(t: Target): string {
  const digits = t.unit === '×' ? 2 : 1;
  const v = `${t.value.toFixed(digits)}${t.unit === '×' ? '×' : ` ${t.unit}`}`;
  const limit = `${t.limit}${t.unit === '×' ? '×' : ` ${t.unit}`}`;
  return `${t.name.padEnd(42)} ${v.padStart(10)}  (want ${t.op} ${limit})  ${t.met ? 'met' : 'not met'}`;
}
