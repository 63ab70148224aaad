import { describe, expect, it } from 'vitest';
import type { AgentSpec, ToolCatalogEntry } from '@agent-reach/shared';
import { agentVocabulary, checkTopic } from './topic-gate.js';
import { buildVocabulary } from './vocabulary.js';
import { terms, words } from './vocabulary-words.js';

/** A catalog entry as the vocabulary reads it: its name and description (no parameters). */
const tool = (name: string, description: string) => ({ name, description }) as ToolCatalogEntry;
const book = tool('book_table', 'Book a table at the restaurant for a party at a date and time.');
const cancel = tool('cancel_table_booking', 'Cancel a table booking.');
const hours = tool('get_opening_hours', 'Opening hours of the restaurant.');
const catalog = new Map([book, cancel, hours].map((t) => [t.name, t]));
const restaurant: AgentSpec = { name: 'restaurant', tools: [...catalog.keys()], allowed_topic: ['tables'] };
const vocabulary = agentVocabulary(restaurant, catalog);
const scoreOf = (input: string) => checkTopic(restaurant, vocabulary, input)?.score ?? 0;
const first = (w: { alts: string[] }) => w.alts[0];

describe('words that carry no topic', () => {
  it('reads time words, and numbers with a unit, as saying when and how much, not about what', () => {
    const read = words('我这周不在家，快递能不能改到下周一再送').map(first);
    expect(read).not.toContain('周');
    expect(read).not.toContain('下周一');
    expect(read).toContain('快递');
    const plain = words('关于明晚的事，直接帮我写一封信').map(first);
    expect(plain.filter((w) => ['关于', '明晚', '直接'].includes(w as string))).toEqual([]);
    expect(terms('whats the cheapest way to ship a 20kg box on Friday morning next week')).toEqual([
      'cheapest',
      'ship',
      'box',
    ]);
  });

  it('marks the verbs of a request, so that one the agent does not know weighs neither for nor against it', () => {
    const verbs = (text: string) =>
      words(text)
        .filter((w) => w.verb)
        .map(first);
    expect(verbs('预约时间往后推迟一个小时')).toEqual(expect.arrayContaining(['往后', '推迟']));
    expect(verbs('please call off our reservation')).toEqual(['call', 'off']);
    expect(checkTopic(restaurant, vocabulary, '预约时间往后推迟一个小时')?.verdict).toBe('on_topic');
  });
});

describe('words the agent does not know', () => {
  it('weighs a service word of another domain against the agent more than a name it does not know', () => {
    expect(scoreOf('帮我订一个理发')).toBeLessThan(scoreOf('帮我给张伟订一个'));
  });

  it('reads a country, in Chinese or English, as a place abroad: known where tools go abroad, else neutral', () => {
    expect(words('去日本一周')).toEqual([expect.objectContaining({ place: true })]);
    const carrier = buildVocabulary({
      tools: [
        { name: 'get_usage', description: 'Data, minutes and texts used so far, and what remains.' },
        { name: 'add_roaming_pack', description: 'Add a travel pack for data and calls abroad.' },
      ],
    });
    expect(carrier.score('去日本一周，要开什么才能上网').labels[0]?.label).toBe('add_roaming_pack');
    expect(carrier.score('I will be in Mexico for a week and need data').labels[0]?.label).toBe(
      'add_roaming_pack',
    );
    // The restaurant knows nothing abroad: the country neither places the request nor displaces it.
    expect(scoreOf('日本的朋友来，帮我订个桌')).toBe(scoreOf('朋友来，帮我订个桌'));
  });

  it('meets the words tools describe a thing by through the senses of an English word ("left", "remains")', () => {
    const carrier = buildVocabulary({
      tools: [
        { name: 'get_current_plan', description: 'The current plan: monthly fee and included data.' },
        { name: 'get_usage', description: 'Data used so far, and what remains of the allowance.' },
      ],
    });
    expect(carrier.score('How much data have I got left?').labels[0]).toMatchObject({
      label: 'get_usage',
    });
    expect(terms('two boxes and three branches')).toEqual(['box', 'branch']);
  });
});
