import type { Draws } from './draws.js';
import { aliasFormsIn, enumHinted, PLACE_SUFFIXES, type NoisyTool } from './noisy-tools.js';
import type { NoisyMistake, NoisyRates } from './types.js';

/** A call as the model sends it. */
export interface NoisyCall {
  name: string;
  args: Record<string, unknown>;
}

/** Fields a model invents: plausible, and absent from most schemas. */
const INVENTED_FIELDS: ReadonlyArray<readonly [string, unknown]> = [
  ['date', 'today'],
  ['unit', 'metric'],
  ['language', 'zh-CN'],
  ['verbose', true],
  ['format', 'json'],
];
const NAME_PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ['query_', 'get_'],
  ['get_', 'fetch_'],
  ['write_', 'save_'],
  ['search_', 'find_'],
];

/** A tool name close to `name` that is not one of `offered`: another verb, a dropped letter, a suffix. */
export function nearMissTool(name: string, offered: ReadonlySet<string>, d: Draws): string {
  const swapped = NAME_PREFIXES.find(([from]) => name.startsWith(from));
  const vowel = name.slice(1).search(/[aeiou](?!.*[aeiou])/);
  const candidates = [
    ...(swapped ? [swapped[1] + name.slice(swapped[0].length)] : []),
    vowel >= 0 ? name.slice(0, vowel + 1) + name.slice(vowel + 2) : `${name}s`,
    `${name}_info`,
  ].filter((c) => !offered.has(c));
  return candidates.length > 0 ? d.pick(candidates) : `${name}_v2`;
}

/** A form of an enum value outside the enum: what the user wrote (`广州市`), else a suffixed or respelt one. */
function driftedValue(value: string, values: readonly string[], task: string, d: Draws): string {
  const written = aliasFormsIn(task, value, values)[0];
  const pick = d.next();
  if (written !== undefined) return written;
  if (/[\u4e00-\u9fff]/.test(value)) return `${value}${PLACE_SUFFIXES[pick < 0.5 ? 1 : 0]}`;
  const spaced = value.replace(/_/g, ' ');
  return spaced !== value && pick < 0.5
    ? spaced
    : value.toUpperCase() === value
      ? `${value}s`
      : value.toUpperCase();
}

/** The per-request inputs of the mistake draws. */
export interface MistakeInputs {
  tool: NoisyTool;
  offered: ReadonlySet<string>;
  rates: Required<NoisyRates>;
  task: string;
  /** Draws of this call only: always the same number of them, whatever the rates (see `applyMistakes`). */
  draws: Draws;
}

/**
 * The intended call with the seeds' mistakes drawn into it. Every call uses the same draws in the same
 * order whatever the rates and hints, so a request with hints and one without make the same choices
 * except where the hint moves a rate across the draw.
 */
export function applyMistakes(
  intended: NoisyCall,
  m: MistakeInputs,
): { call: NoisyCall; mistakes: NoisyMistake[] } {
  const { tool, rates, draws: d } = m;
  const mistakes: NoisyMistake[] = [];
  const args = { ...intended.args };
  let name = intended.name;

  const hallucinate = d.next();
  const nearMiss = nearMissTool(intended.name, m.offered, d);
  if (hallucinate < rates.hallucinated_tool) {
    name = nearMiss;
    mistakes.push({ kind: 'hallucinated_tool', tool: tool.name, sent: name });
  }

  for (const prop of tool.properties) {
    const u = d.next();
    const value = args[prop.name];
    const drifted =
      typeof value === 'string' && prop.enum ? driftedValue(value, prop.enum, m.task, d) : d.next();
    if (prop.enum === undefined || typeof value !== 'string' || typeof drifted !== 'string') continue;
    const rate = enumHinted(tool, prop) ? rates.enum_drift_hinted : rates.enum_drift;
    if (u < rate) {
      args[prop.name] = drifted;
      mistakes.push({ kind: 'enum_drift', tool: tool.name, field: prop.name, sent: drifted });
    }
  }

  const typed = tool.properties.filter(
    (p) => ['number', 'integer', 'boolean'].includes(p.type ?? '') && args[p.name] !== undefined,
  );
  const typeDraw = d.next();
  const typePick = d.int(Math.max(1, typed.length));
  const typed0 = typed[typePick];
  if (typed0 && typeDraw < (tool.showsExamples ? rates.type_drift_hinted : rates.type_drift)) {
    args[typed0.name] = String(args[typed0.name]);
    mistakes.push({ kind: 'type_drift', tool: tool.name, field: typed0.name, sent: args[typed0.name] });
  }

  const fieldDraw = d.next();
  const invented = INVENTED_FIELDS.filter(([f]) => !tool.properties.some((p) => p.name === f));
  const extra = invented[d.int(Math.max(1, invented.length))];
  if (extra && fieldDraw < (tool.showsExamples ? rates.unknown_field_hinted : rates.unknown_field)) {
    args[extra[0]] = extra[1];
    mistakes.push({ kind: 'unknown_field', tool: tool.name, field: extra[0], sent: extra[1] });
  }
  return { call: { name, args }, mistakes };
}
