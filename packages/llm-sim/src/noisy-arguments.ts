import { conceptWords, latinWords } from './noisy-lexicon.js';
import { enumValuesIn, patternMatch, type NoisyStep } from './noisy-intent.js';
import type { NoisyProperty, NoisyTool } from './noisy-tools.js';

/** What the model has read so far, for arguments that carry earlier results (a file's content). */
export interface FillContext {
  /** The whole request the step is part of. */
  task: string;
  /** Results of the calls that succeeded so far, oldest first. */
  results: Array<{ tool: string; content: unknown }>;
}

const CHINESE_DIGITS: Record<string, number> = {
  一: 1,
  两: 2,
  二: 2,
  三: 3,
  四: 4,
  五: 5,
  六: 6,
  七: 7,
  八: 8,
  九: 9,
  十: 10,
};
const FILE_NAME = /[\w\-/.]*[\w-]\.(?:md|txt|json|csv|html)\b/i;
const PATH_LIKE = /path|file|filename|name_of_file/i;
const TEXT_LIKE = /^(content|body|text|markdown|message|note|summary)$/i;

function numbersIn(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(
    /(?<![\w-])(\d+(?:\.\d+)?)(?![\w-])|([一两二三四五六七八九十])(?=[天个张次位份条晚])/g,
  )) {
    out.push(m[1] !== undefined ? Number(m[1]) : (CHINESE_DIGITS[m[2] ?? ''] ?? 1));
  }
  return out;
}

function summaryOf(content: unknown): string {
  if (typeof content === 'string') return content.slice(0, 300);
  const o = content as { summary?: unknown; content?: { summary?: unknown } } | null;
  const summary = o?.summary ?? o?.content?.summary;
  if (typeof summary === 'string') return summary;
  return JSON.stringify(content).slice(0, 300);
}

/** Text for a content-like argument: the request, then what the earlier steps found. */
function composedText(ctx: FillContext): string {
  const found = ctx.results.map((r) => `- ${r.tool}: ${summaryOf(r.content)}`);
  return [`# ${ctx.task.slice(0, 80)}`, '', ...found].join('\n');
}

function fileName(prop: NoisyProperty, ctx: FillContext, tool: NoisyTool): string {
  const named = FILE_NAME.exec(ctx.task)?.[0];
  if (named !== undefined) return named;
  const wantsMd = /\.md\b|markdown/i.test(`${tool.name} ${tool.description} ${prop.description}`);
  return wantsMd ? 'result.md' : 'result.txt';
}

/** Whether the clause asks for this optional argument (its words, or what the lexicon maps to them). */
function asked(prop: NoisyProperty, clause: string): boolean {
  const words = conceptWords(clause);
  return latinWords(prop.name).some((w) => words.has(w));
}

function stringValue(prop: NoisyProperty, step: NoisyStep, ctx: FillContext, tool: NoisyTool): unknown {
  if (step.pinned?.field === prop.name) return step.pinned.value;
  if (prop.enum !== undefined) {
    const named =
      enumValuesIn({ ...tool, properties: [prop] }, step.clause)[0] ??
      enumValuesIn({ ...tool, properties: [prop] }, ctx.task)[0];
    return named?.value ?? (prop.required ? (prop.default ?? prop.enum[0]) : undefined);
  }
  if (prop.pattern !== undefined) {
    const found = patternMatch(prop.pattern, step.clause) ?? patternMatch(prop.pattern, ctx.task);
    return found ?? (prop.required ? (prop.examples[0] ?? prop.default) : undefined);
  }
  if (PATH_LIKE.test(prop.name)) return fileName(prop, ctx, tool);
  if (TEXT_LIKE.test(prop.name)) return composedText(ctx);
  const quoted = /["“「『]([^"”」』]{1,200})["”」』]/.exec(step.clause)?.[1];
  if (quoted !== undefined) return quoted;
  return prop.required ? step.clause : undefined;
}

function value(prop: NoisyProperty, step: NoisyStep, ctx: FillContext, tool: NoisyTool): unknown {
  switch (prop.type) {
    case 'integer':
    case 'number': {
      const n = numbersIn(step.clause)[0];
      if (n !== undefined && (asked(prop, step.clause) || prop.required))
        return prop.type === 'integer' ? Math.round(n) : n;
      return prop.required ? (prop.default ?? prop.examples[0] ?? 1) : undefined;
    }
    case 'boolean':
      if (asked(prop, step.clause)) return true;
      return prop.required ? (prop.default ?? false) : undefined;
    case 'array':
      return prop.required ? [] : undefined;
    case 'object':
      return prop.required ? {} : undefined;
    default:
      return stringValue(prop, step, ctx, tool);
  }
}

/**
 * The arguments a careful model would send for a step: enum values and pattern matches found in the
 * request, numbers and flags it asks for, a file name and content for file tools; optional arguments
 * only when the request gives them.
 */
export function intendedArguments(
  tool: NoisyTool,
  step: NoisyStep,
  ctx: FillContext,
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const prop of tool.properties) {
    const v = value(prop, step, ctx, tool);
    if (v !== undefined) args[prop.name] = v;
  }
  return args;
}
