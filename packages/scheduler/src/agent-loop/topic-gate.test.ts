import { describe, expect, it } from 'vitest';
import type { AgentSpec } from '@agent-reach/shared';
import { agentVocabulary, checkTopic, offTopicAnswer } from './topic-gate.js';
import { terms } from './vocabulary.js';

const INVOICES = {
  name: 'get_invoice',
  description: 'One invoice by its id: amount due, due date and payment status.',
  group: 'default',
  parameters: { type: 'object', properties: { invoice_id: { type: 'string' } } },
  timeoutMs: 1000,
  maxAttempts: 1,
  backoffMs: 0,
  requiresConfirmation: false,
};
const catalog = new Map([[INVOICES.name, INVOICES]]);
const billing: AgentSpec = {
  name: 'billing',
  tools: ['get_invoice'],
  allowed_topic: ['payments'],
  examples: { payments: ['我的付款成功了吗', 'did my card payment go through'] },
};

describe('vocabulary terms', () => {
  it('splits identifiers, drops stop words, stems plurals and pairs neighbouring Chinese characters', () => {
    expect(terms('Where are my unpaidInvoices and invoice_id?')).toEqual([
      'unpaid',
      'invoice',
      'invoice',
      'id',
    ]);
    // A pair of two particles or pronouns (我的) says nothing and is left out.
    expect(terms('我的发票')).toEqual(['的发', '发票']);
  });
});

describe('checkTopic', () => {
  const vocabulary = agentVocabulary(billing, catalog);

  it("places requests that share the tools' or the examples' words within the topics, in both languages", () => {
    expect(checkTopic(billing, vocabulary, 'What is the amount due on INV-301?')).toMatchObject({
      verdict: 'on_topic',
      best: 'get_invoice',
    });
    expect(checkTopic(billing, vocabulary, '付款失败了怎么办')).toMatchObject({
      verdict: 'on_topic',
      best: 'payments',
    });
  });

  it('places unrelated requests outside, refusing by default, and never a greeting', () => {
    expect(checkTopic(billing, vocabulary, 'Write a poem about the sea')).toEqual({
      verdict: 'off_topic',
      action: 'refuse',
      topics: ['payments'],
      score: 0,
    });
    expect(checkTopic({ ...billing, topic_policy: 'warn' }, vocabulary, '推荐一部电影')?.action).toBe('warn');
    expect(checkTopic(billing, vocabulary, '你好')?.verdict).toBe('on_topic');
  });

  it('decides nothing for an agent without topics', () => {
    const open = { name: 'open', tools: ['get_invoice'] };
    expect(checkTopic(open, agentVocabulary(open, catalog), 'Write a poem')).toBeUndefined();
  });

  it('names the topics in the refusal', () => {
    expect(offTopicAnswer(['payments', 'invoices'])).toMatch(
      /^I can only help with these topics: payments, invoices\./,
    );
  });
});

describe('agentVocabulary', () => {
  it("builds an agent's vocabulary again once the catalog describes one of its tools differently", () => {
    const agent: AgentSpec = { name: 'billing', tools: ['get_invoice'] };
    const first = agentVocabulary(agent, catalog);
    expect(agentVocabulary(agent, new Map(catalog))).toBe(first);
    const renamed = { ...INVOICES, description: 'A refund of an order, by the order number.' };
    const changed = agentVocabulary(agent, new Map([[INVOICES.name, renamed]]));
    expect(changed).not.toBe(first);
    expect(changed.score('refund my order').labels[0]?.label).toBe('get_invoice');
    expect(first.score('refund my order').labels).toEqual([]);
  });
});
