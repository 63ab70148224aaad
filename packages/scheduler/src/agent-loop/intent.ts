import type { RunIntent } from '@agent-reach/protocol';
import { requestActions, WRITES } from './verb-senses.js';
import { buildVocabulary, type Vocabulary, type VocabularyTool } from './vocabulary.js';

/**
 * What a request asks for, decided before the first model call and without calling the model:
 * - `simple`: a question or remark the model answers from what it knows (greetings, explanations);
 * - `single_tool`: one action, one tool call;
 * - `multi_step`: several tool calls (sequenced, different tools, or one tool for several things).
 * Only multi-step runs get a plan (an extra model call) and the larger iteration limit.
 */
export type Intent = RunIntent;

export const INTENTS: readonly Intent[] = ['simple', 'single_tool', 'multi_step'];

/** A tool the agent may reach, as the classifier sees it (name, description, parameters). */
export type IntentTool = VocabularyTool;

/** Smallest score (see `LabelScore`) at which a request names a tool. */
const TOOL_NAMED_MIN_SCORE = 0.15;

export interface IntentDecision {
  intent: Intent;
  /** Which signals decided it, for the run's events (stable words). */
  signals: string[];
}

/** Words that order actions: "first … then …", "先…再…", "最后". */
const SEQUENCE = [
  /\b(then|afterwards?|after that|finally|followed by|and also|as well as|once (?:that|done|you)|before (?:you|writing|sending|answering))\b/i,
  // "next" orders actions, not things: "my next lesson" and "next week" are one.
  /(?<!\b(?:my|our|your|his|her|their|the|this|that|a)\s+)\bnext\b(?!\s+(?:week|month|year|weekend|day|time|morning|afternoon|evening|one|mon|tue|wed|thu|fri|sat|sun)\w*)/i,
  /\bfirst\b.*\b(then|and|after)\b/i,
  /\b(step \d|steps)\b/i,
  /然后|接着|之后|随后|最后|首先|其次|再把|再帮|再写|再查|再给|并且|并把|同时|顺便|第[一二三四五1-5]步|先.{1,30}再/,
  // A second action on a condition: "先查…，要是丢了就…", "没课的话帮我选…", "if it has not left, redirect it".
  /先.{1,30}(?:就|然后)|(?:如果|要是|假如|万一|的话).{0,20}(?:就|再|帮我|给我|替我)/,
  /\b(?:and|,)\s*if\b.{1,60},\s*\w+/i,
];

/** Words that ask for one action over several things: "compare", "each", "both", "分别", "所有". */
const SEVERAL = [
  /\b(compare|comparison|each|every|both|all (?:of|the|my)|for all|summar(?:y|ize|ise) of|report on|between)\b/i,
  // "两个城市" asks about two things; "碎了两个" counts what happened to one.
  /比较|对比|分别|每个|每一个|各个|所有|全部|(?:两|三|几)个(?=\p{Script=Han})|这些|哪个更|汇总|总结一下/u,
];

/** Verbs that ask for an action (a tool), in English and Chinese. */
const ACTION = [
  /\b(check|look ?up|find|get|fetch|query|search|track|show me|tell me (?:the|about my)|what(?:'s| is) the (?:status|weather|forecast)|write|save|create|draft|store|export|send|book|cancel|refund|convert|calculate|where is|is my|will it)\b/i,
  /查|查询|查看|查一下|看看|看一下|找|搜|帮我|写|保存|生成|记录|导出|发送|预订|取消|退款|计算|转换|在哪|到哪|会不会|下雨|怎么样了/,
];

/** Greetings and talk about the assistant itself: no tool. */
const SMALL_TALK = [
  /^\s*(hi|hello|hey|thanks|thank you|good (?:morning|evening|night)|bye|ok(?:ay)?|who are you|what can you do)\b[\s!.?,]*$/i,
  /^\s*(你好|您好|嗨|谢谢|多谢|再见|早上好|晚上好|你是谁|你能做什么|你会什么)[\s!！。.?？,，]*$/,
];

/** Asking for an explanation, not an action: "why …", "explain …", "为什么", "一般". */
const EXPLAIN = [
  /\b(why|explain|difference between|what does .{1,40} mean|how does|in general|usually)\b/i,
  /为什么|为啥|解释|什么是|区别|原理|一般|通常/,
];

/** Something only a tool can look up: an order id, a reference, a number of several digits. */
const CONCRETE = /\b[A-Z]{2,}-\d+|\bref_\w+|\d{4,}/i;

/** Lists with several items ("1. … 2. …", "- … - …", "；"-separated asks). */
const LIST_ITEMS = /(?:^|\n)\s*(?:\d+[.)、]|[-*•])\s+\S/g;

/** Places, orders and other things named several times: "上海和北京", "ORD-1 and ORD-2", "A、B". */
const ENUMERATION = [
  // 及 joins two things, not the 及 of "来得及", "不及".
  /[\u4e00-\u9fa5A-Za-z0-9-]{1,12}\s*(?:和|与|跟|(?<![得不])及|、|以及)\s*[\u4e00-\u9fa5A-Za-z0-9-]{1,12}/,
  /\b[A-Z][\w-]+\s*(?:,\s*[A-Z][\w-]+\s*)*(?:,\s*)?(?:and|or|vs\.?|versus)\s+[A-Z][\w-]+/,
  /\b([A-Z]{2,})-\d+.*\b\1-\d+/,
];

/**
 * Classifies a request by keyword and structure over Chinese and English; the agent's vocabulary (its
 * tools, topics and examples: see `vocabulary.ts`) tells which tools it names. With no tools, everything
 * is `simple`: the agent can only answer.
 */
export function classifyIntent(input: string, agent: readonly IntentTool[] | Vocabulary): IntentDecision {
  const vocabulary = 'score' in agent ? agent : buildVocabulary({ tools: agent });
  const text = input.trim();
  if (vocabulary.tools.length === 0) return { intent: 'simple', signals: ['no_tools'] };
  if (isSmallTalk(text)) return { intent: 'simple', signals: ['small_talk'] };
  // A general question about a topic the tools cover is still answered from knowledge.
  if (EXPLAIN.some((r) => r.test(text)) && !CONCRETE.test(text) && !SEQUENCE.some((r) => r.test(text)))
    return { intent: 'simple', signals: ['explanation'] };
  const named = toolsNamed(text, vocabulary);
  const signals: string[] = [];
  if (SEQUENCE.some((r) => r.test(text))) signals.push('sequence');
  if ((text.match(LIST_ITEMS) ?? []).length >= 2) signals.push('list');
  if (named.length >= 2) signals.push('several_tools');
  // Asking to make, cancel or change something is an action, whatever the words for it.
  const action = ACTION.some((r) => r.test(text)) || [...requestActions(text)].some((a) => WRITES.has(a));
  if (named.length === 1 || action) {
    // "All my bookings" is what a tool that lists does in one call.
    const lists = named.length === 1 && vocabulary.actionOf(named[0] as string) === 'list';
    if (!lists && SEVERAL.some((r) => r.test(text))) signals.push('several_things');
    if (named.length === 1 && ENUMERATION.some((r) => r.test(text))) signals.push('enumeration');
    if (questions(text) >= 2) signals.push('several_questions');
  }
  if (signals.length > 0 && (named.length > 0 || action)) return { intent: 'multi_step', signals };
  if (named.length === 1) return { intent: 'single_tool', signals: ['one_tool'] };
  if (action) return { intent: 'single_tool', signals: ['action'] };
  return { intent: 'simple', signals: ['no_action'] };
}

/** Greetings and talk about the assistant itself (and nothing at all): no tool, and no topic. */
export function isSmallTalk(text: string): boolean {
  return text.trim() === '' || SMALL_TALK.some((r) => r.test(text.trim()));
}

/** The agent's tools the request names (see `Vocabulary.named`). */
function toolsNamed(text: string, vocabulary: Vocabulary): string[] {
  return vocabulary.named(text, 'tool', TOOL_NAMED_MIN_SCORE);
}

/** Questions asked, by their question marks. */
function questions(text: string): number {
  return (text.match(/[?？]/g) ?? []).length;
}
