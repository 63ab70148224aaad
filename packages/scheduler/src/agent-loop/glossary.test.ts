import { describe, expect, it } from 'vitest';
import type { AgentSpec, ToolCatalogEntry } from '@agent-reach/shared';
import { ZH_GLOSSARY, ZH_STOP_WORDS } from './glossary.js';
import { agentVocabulary, checkTopic } from './topic-gate.js';
import { words } from './vocabulary-words.js';
import { readTable, ZH_PLACE_NAMES } from './zh-service-words.js';

/** A catalog entry of a tool described in English only, as most tools are. */
const tool = (name: string, description: string): ToolCatalogEntry => ({
  name,
  description,
  group: 'default',
  parameters: { type: 'object', properties: {} },
  timeoutMs: 1000,
  maxAttempts: 1,
  backoffMs: 0,
  requiresConfirmation: false,
});

// Domains no test agent had before the service glossary: a bank and an insurer, without Chinese examples,
// so every Chinese word below reaches the tools through the glossary alone.
const catalog = new Map(
  [
    tool('get_account_balance', 'Balance and recent transactions of a bank account.'),
    tool('transfer_money', 'Transfer money from one bank account to another.'),
    tool('report_lost_card', 'Block a lost or stolen bank card and order a new one.'),
    tool('get_claim_status', 'Progress of an insurance claim: assessment, approval and payout.'),
    tool('renew_policy', 'Renew an insurance policy for another year and quote its premium.'),
  ].map((t) => [t.name, t]),
);
const bank: AgentSpec = {
  name: 'bank',
  tools: ['get_account_balance', 'transfer_money', 'report_lost_card'],
  allowed_topic: ['accounts', 'transfers', 'cards'],
};
const insurer: AgentSpec = {
  name: 'insurer',
  tools: ['get_claim_status', 'renew_policy'],
  allowed_topic: ['claims', 'policies'],
};

const best = (agent: AgentSpec, text: string) =>
  agentVocabulary(agent, catalog)
    .score(text)
    .labels.find((l) => l.kind === 'tool')?.label;
const verdict = (agent: AgentSpec, text: string) =>
  checkTopic(agent, agentVocabulary(agent, catalog), text)?.verdict;

describe('the Chinese service glossary', () => {
  it('places everyday Chinese requests of a domain within an agent whose tools are described in English', () => {
    expect(verdict(bank, '我卡里还有多少余额')).toBe('on_topic');
    expect(best(bank, '我卡里还有多少余额')).toBe('get_account_balance');
    expect(best(bank, '帮我转账五百块给我妈')).toBe('transfer_money');
    expect(best(bank, '银行卡丢了，赶紧帮我挂失')).toBe('report_lost_card');
    expect(verdict(insurer, '我的理赔进度咋样了')).toBe('on_topic');
    expect(best(insurer, '我的理赔进度咋样了')).toBe('get_claim_status');
    expect(best(insurer, '保单快到期了，能不能续保')).toBe('renew_policy');
  });

  it("still refuses another domain's request, including one whose English equivalent is a homonym", () => {
    expect(verdict(bank, '附近有什么好吃的餐馆')).toBe('off_topic');
    expect(verdict(insurer, '帮我预约明天的牙医')).toBe('off_topic');
    // 股票 is shares, not the stock a lab keeps: it does not meet a tool about reagent stock.
    const lab: AgentSpec = { name: 'lab', tools: ['check_reagent_stock'], allowed_topic: ['reagents'] };
    const labCatalog = new Map([
      ['check_reagent_stock', tool('check_reagent_stock', 'Stock level of a reagent in the lab store.')],
    ]);
    expect(checkTopic(lab, agentVocabulary(lab, labCatalog), '股票现在能买吗')?.verdict).toBe('off_topic');
  });

  it('lets politeness and request phrases neither decide a refusal nor change how a request scores', () => {
    for (const text of ['好的，谢谢', '好的，麻烦了，不好意思', 'ok, thanks', '嗯嗯，明白，辛苦了']) {
      expect(verdict(bank, text), text).toBe('on_topic');
    }
    const vocabulary = agentVocabulary(bank, catalog);
    const plain = vocabulary.score('查一下账户余额');
    expect(vocabulary.score('麻烦帮我查一下账户余额，谢谢啦').domain).toBe(plain.domain);
    // A request in a script the vocabulary does not read is still placed by its score, not waved through.
    expect(verdict(bank, 'Привет, как дела')).toBe('off_topic');
  });

  it('reads numbers with their measure words and places the agent does not know as neither for nor against', () => {
    expect(words('两张三天第二个几点')).toEqual([]);
    const vocabulary = agentVocabulary(bank, catalog);
    const plain = vocabulary.score('查一下账户余额').domain;
    expect(vocabulary.score('查一下杭州那个账户的余额').domain).toBe(plain);
    // An agent that names the place in its examples knows it: there it places the request.
    const rail: AgentSpec = {
      name: 'rail',
      tools: ['transfer_money'],
      allowed_topic: ['trips'],
      examples: { trips: ['去杭州的车'] },
    };
    expect(agentVocabulary(rail, catalog).score('杭州').known).toEqual(['杭州']);
  });
});

describe('the glossary table', () => {
  it('gives each word the English of every line that has it', () => {
    expect(readTable(['银行 bank\n  转账 transfer', '银行 branch bank\n\n'])).toEqual({
      银行: 'bank branch',
      转账: 'transfer',
    });
  });

  it('holds only Chinese words with English, none of them also a word that carries no topic', () => {
    const entries = Object.entries(ZH_GLOSSARY);
    expect(entries.length).toBeGreaterThan(700);
    for (const [word, english] of entries) {
      expect(word, word).toMatch(/^\p{Script=Han}+$/u);
      expect(english, word).toMatch(/^[a-z0-9-]+(?: [a-z0-9-]+)*$/);
      expect(ZH_STOP_WORDS.has(word), word).toBe(false);
      expect(ZH_PLACE_NAMES.has(word), word).toBe(false);
    }
  });
});
