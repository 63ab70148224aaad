import { describe, expect, it } from 'vitest';
import type { AgentSpec } from '@agent-reach/shared';
import { agentVocabulary, checkTopic, offTopicAnswer } from './topic-gate.js';
import { requestActions, toolAction } from './verb-senses.js';
import { buildVocabulary } from './vocabulary.js';
import { terms, words } from './vocabulary-words.js';

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

/** A catalog entry of a tool the tests describe. */
const entry = (name: string, description: string) => ({ ...INVOICES, name, description, parameters: {} });

/** Agents of three domains, each with a word another domain also uses (stock, office, booking). */
const DOMAINS = new Map(
  [
    entry(
      'lab_sensor_read',
      'Current reading of a lab sensor: fridge and freezer temperature, CO2 incubator.',
    ),
    entry(
      'check_reagent_stock',
      'Stock level of a reagent or consumable in the lab store, with its expiry date.',
    ),
    entry('book_instrument', 'Book time on a shared lab instrument (PCR machine, centrifuge, microscope).'),
    entry('reset_password', "Reset a staff member's account password and send a temporary one."),
    entry('create_it_ticket', 'Open an IT support ticket for a broken laptop, printer or network problem.'),
    entry('check_vpn_status', 'Whether the VPN and the office network are up, and known outages.'),
    entry('search_catalog', 'Search the library catalogue for books and journals by title or author.'),
    entry('reserve_study_room', 'Reserve a study room or seat in the library for a time slot.'),
    entry('get_fines', 'Overdue fines and fees the borrower owes, and how to pay them.'),
    entry('list_library_events', 'Library events: workshops, trainings, talks and reading groups.'),
  ].map((t) => [t.name, t]),
);
const lab: AgentSpec = {
  name: 'lab_assistant',
  tools: ['lab_sensor_read', 'check_reagent_stock', 'book_instrument'],
  allowed_topic: ['instruments', 'reagents', 'sensors'],
};
const itDesk: AgentSpec = {
  name: 'it_helpdesk',
  tools: ['reset_password', 'create_it_ticket', 'check_vpn_status'],
  allowed_topic: ['accounts', 'hardware', 'network'],
};
const libraryDesk: AgentSpec = {
  name: 'library_desk',
  tools: ['search_catalog', 'reserve_study_room', 'get_fines', 'list_library_events'],
  allowed_topic: ['books', 'study_rooms', 'fines', 'events'],
  examples: { reserve_study_room: ['帮我约一个明天下午的自习室座位'] },
};
const verdict = (agent: AgentSpec, input: string) =>
  checkTopic(agent, agentVocabulary(agent, DOMAINS), input);

describe('words shared between domains', () => {
  it('cuts Chinese into words: glossary words by longest match, the text between them by Intl.Segmenter', () => {
    expect(words('实验室的PCR仪怎么预约').map((w) => w.alts[0])).toEqual(['pcr', '实验室', '仪', '预约']);
    expect(words('我的滞纳金是多少')[0]?.alts).toEqual([
      '滞纳金',
      '滞纳',
      '纳金',
      'fine',
      'fee',
      'late',
      'overdue',
    ]);
  });

  it('places a request outside when its only known words are ones other domains share', () => {
    expect(verdict(lab, 'Which stocks should I buy?')).toMatchObject({ verdict: 'off_topic' });
    expect(verdict(itDesk, 'Any good sushi place near the office?')).toMatchObject({ verdict: 'off_topic' });
    expect(verdict(libraryDesk, '实验室的PCR仪怎么预约')).toMatchObject({ verdict: 'off_topic' });
  });

  it('still places requests with the words that distinguish the domain within it', () => {
    expect(verdict(lab, 'Is there still enough Taq in the reagent stock?')).toMatchObject({
      verdict: 'on_topic',
    });
    expect(verdict(itDesk, 'The office network is down, is the VPN up?')).toMatchObject({
      verdict: 'on_topic',
    });
    expect(verdict(lab, '实验室的PCR仪怎么预约')).toMatchObject({ verdict: 'on_topic' });
  });

  it("places common Chinese words the agent's own words do not hold within its topics, by their meaning", () => {
    const fees = verdict(libraryDesk, '我的滞纳金是多少');
    expect(fees).toMatchObject({ verdict: 'on_topic', best: 'get_fines' });
    expect(fees?.score).toBeGreaterThan(0);
    expect(verdict(libraryDesk, '图书馆最近有什么培训')).toMatchObject({ verdict: 'on_topic' });
    expect(agentVocabulary(libraryDesk, DOMAINS).score('这个月有没有培训').labels[0]?.label).toBe(
      'list_library_events',
    );
  });
});

describe('which tool a request names', () => {
  it("ranks the tool whose own name holds the request's word above one whose description mentions it", () => {
    const vocabulary = buildVocabulary({
      tools: [
        { name: 'restart_service', description: 'Restart a service; its log shows when it came back.' },
        { name: 'get_recent_logs', description: 'Recent entries of a service.' },
        { name: 'list_services', description: 'Every service with its owner.' },
      ],
    });
    expect(vocabulary.score('show me the log of the gateway service').labels[0]?.label).toBe(
      'get_recent_logs',
    );
    expect(vocabulary.score('查看支付服务的日志').labels[0]?.label).toBe('get_recent_logs');
  });

  it('between tools a question fits equally, names the one that reads', () => {
    const vocabulary = buildVocabulary({
      tools: [
        { name: 'request_leave', description: 'Annual leave days.' },
        { name: 'get_leave_balance', description: 'Annual leave days.' },
      ],
    });
    expect(vocabulary.score('How many annual leave days do I have?').labels[0]?.label).toBe(
      'get_leave_balance',
    );
    expect(vocabulary.score('Annual leave days for me from Monday').labels[0]?.label).toBe('request_leave');
  });
});

/** A meeting-room desk: five tools on one thing (a room booking) that differ only by the action. */
const ROOMS = buildVocabulary({
  tools: [
    { name: 'book_meeting_room', description: 'Book a meeting room for a time slot and a number of people.' },
    { name: 'cancel_room_booking', description: 'Cancel a meeting room booking by its id.' },
    { name: 'change_room_booking', description: 'Change the time, room or size of a meeting room booking.' },
    { name: 'get_room_booking', description: 'One meeting room booking: room, floor, time and organiser.' },
    { name: 'list_room_bookings', description: "The user's meeting room bookings." },
  ],
  topics: ['meeting_rooms'],
});
const bestTool = (input: string) => ROOMS.score(input).labels.find((l) => l.kind === 'tool')?.label;

describe('what a request asks to do with a thing', () => {
  it("reads a tool's action from its name's first or last word, never from a noun that ends the name", () => {
    expect(toolAction({ name: 'cancel_room_booking' })).toEqual({ action: 'cancel', verb: 'cancel' });
    expect(toolAction({ name: 'roomBookingUpdate' })).toEqual({ action: 'change', verb: 'update' });
    expect(toolAction({ name: 'search_rooms' })).toEqual({ action: 'list', verb: 'search' });
    expect(toolAction({ name: 'export_notes_file' })).toBeUndefined();
    expect(toolAction({ name: 'check_in_guest' })).toBeUndefined();
    expect(toolAction({ name: 'room_slots', description: 'Delete the free slots of a room.' })).toEqual({
      action: 'cancel',
    });
  });

  it('hears cancelling, changing, reading one record and listing in Chinese, past the booking words', () => {
    expect([...requestActions('会议室那个预订不用了')]).toEqual(['cancel']);
    expect([...requestActions('把下午的会议室改到四点')]).toEqual(['change']);
    expect([...requestActions('我订的会议室在几楼')]).toEqual(['get']);
    expect([...requestActions('我这周有哪些会议室预订')]).toEqual(['list']);
    expect([...requestActions('帮我订一间明天上午的会议室')]).toEqual(['create']);
    expect([...requestActions('会议室大约能坐几个人')]).toEqual(['get']);
    expect([...requestActions('周五的会议室我们不开了，撤了吧')]).toEqual(['cancel']);
    expect([...requestActions('会能不能推到下午')]).toEqual(['change']);
    expect([...requestActions('我的会议室预订确认了吗')]).toEqual(['get']);
  });

  it('takes looking something up as reading one record or a list, and asking whether one exists as a search', () => {
    expect([...requestActions('帮我查一下会议室')].sort()).toEqual(['get', 'list']);
    expect([...requestActions('三楼有空的会议室吗')]).toEqual(['list']);
    expect([...requestActions('周六去南京还有票吗')]).toEqual(['list']);
    expect([...requestActions('Is there a copy of Dune I could borrow?')]).toEqual(['list']);
    expect([...requestActions('先查一下三楼，再帮我订一间')].sort()).toEqual(['create', 'get', 'list']);
    expect([...requestActions('想约个时间做检查')]).toEqual(['create']);
    // A booking asked for stays one beside a question; a further action after a first one is its own.
    expect([...requestActions('帮我订一间会议室，几点都行')].sort()).toEqual(['create', 'get']);
    expect([...requestActions('先订一间会议室，然后列出我所有的预订')].sort()).toEqual(['create', 'list']);
    // Asking whether cancelling is possible still asks to cancel, not to read.
    expect([...requestActions('有没有办法取消预订')]).toEqual(['cancel']);
  });

  it('hears the same actions in English, a booking made in the past being one to read', () => {
    expect([...requestActions('Please move my 3pm room booking to 4pm')]).toEqual(['change']);
    expect([...requestActions('Which room bookings do I have this week?')]).toEqual(['list']);
    expect([...requestActions('What time did I book the boardroom for?')]).toEqual(['get']);
    expect([...requestActions("We won't make it, drop the booking")]).toEqual(['cancel']);
    expect([...requestActions('Reserve the small room for Friday')]).toEqual(['create']);
    expect([...requestActions('Tell me about meeting rooms')]).toEqual([]);
    // "send me" asks for something to read; "check in" is no look-up.
    expect([...requestActions('Send me the booking for room 4')]).toEqual([]);
    expect([...requestActions('Can I check in to the room early?')]).toEqual([]);
  });

  it('names the tool of the action asked for among tools on one thing, in Chinese and English', () => {
    expect(bestTool('帮我订一间明天上午的会议室')).toBe('book_meeting_room');
    expect(bestTool('明天上午的会议室我不要了')).toBe('cancel_room_booking');
    expect(bestTool('把我订的会议室调整到周五')).toBe('change_room_booking');
    expect(bestTool('我订的会议室在几楼')).toBe('get_room_booking');
    expect(bestTool('我这周有哪些会议室预订')).toBe('list_room_bookings');
    expect(bestTool('Please move my 3pm room booking to 4pm')).toBe('change_room_booking');
    expect(bestTool('Which room bookings do I have this week?')).toBe('list_room_bookings');
  });

  it('reads a verb of a request as the tool verb it is: "add … to my booking" asks what add_* does', () => {
    const extras = buildVocabulary({
      tools: [
        { name: 'add_extra', description: 'Add an extra such as a child seat or parking to a booking.' },
        { name: 'change_booking', description: 'Change the dates or the room of a booking.' },
      ],
    });
    expect(extras.score('Add a child seat to my booking').labels[0]?.label).toBe('add_extra');
  });

  it("keeps the action out of the request's domain: it neither places a request nor names a tool alone", () => {
    const plain = ROOMS.score('Which room bookings do I have this week?');
    expect(plain.domain).toBe(ROOMS.score('room bookings this week').domain);
    expect(ROOMS.named('我们不去了', 'tool', 0.15)).toEqual([]);
    expect(ROOMS.named('帮我订一间明天上午的会议室', 'tool', 0.15)).toEqual(['book_meeting_room']);
  });
});
