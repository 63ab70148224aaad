/**
 * What a request asks to do with a thing, and what a tool does to one: the action part of tool names
 * (`book_*`, `cancel_*`, `change_*`, `get_*`, `list_*` …) and of requests in English and Chinese
 * ("cancel", "取消", "不要了"; "move", "改到", "推迟"; "when is my", "几点"; "what … do I have", "有哪些").
 * When one agent has several tools on one object that differ by the action, the object's words fit
 * all of them alike and the action decides; the vocabulary reads it as one more term of the request
 * (see `vocabulary.ts`).
 */

/** The actions a tool takes on a thing. `cancel` includes deleting; `change` includes updating. */
export type Action = 'create' | 'cancel' | 'change' | 'get' | 'list';

/** Actions that change what is stored, as opposed to reading it. */
export const WRITES: ReadonlySet<Action> = new Set(['create', 'cancel', 'change']);

export const ACTIONS: readonly Action[] = ['create', 'cancel', 'change', 'get', 'list'];

/** The verbs tool names and descriptions begin with, by the action they take. */
const TOOL_VERBS: Readonly<Record<string, Action>> = {
  ...verbs('create', 'book reserve create add make new schedule request open file submit issue register'),
  ...verbs('create', 'apply order rent enroll enrol place buy purchase start log record write save send'),
  ...verbs('create', 'post draft generate'),
  ...verbs('cancel', 'cancel delete remove withdraw revoke void drop unbook unsubscribe'),
  ...verbs('change', 'change update modify edit reschedule move set rename amend extend renew patch adjust'),
  ...verbs('get', 'get read show view fetch check lookup describe retrieve query track'),
  ...verbs('list', 'list search find browse'),
};

/** Verbs that name things as often as actions: one ends a tool's name as its object (`write_file`). */
const ALSO_NOUNS = new Set(
  'file order record log book list set issue track check query request open new start place post draft'.split(
    ' ',
  ),
);

function verbs(action: Action, words: string): Record<string, Action> {
  return Object.fromEntries(words.split(' ').map((w) => [w, action]));
}

/** The words of a tool's name (`get_table_booking`, `getTableBooking` → get, table, booking). */
function nameWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/**
 * The action a tool takes and the word of its name that says so: its name's first word
 * (`cancel_table_booking`) or its last (`lab_sensor_read`, not the "file" of `write_markdown_file`),
 * else its description's first word ("Cancel an existing booking").
 */
export function toolAction(tool: {
  name: string;
  description?: string;
}): { action: Action; verb?: string } | undefined {
  const words = nameWords(tool.name);
  // "check_in", "sign_out": a verb and its particle are another verb.
  const first = /^(?:in|out|up|off|on)$/.test(words[1] ?? '') ? undefined : words[0];
  const last = words.length > 1 ? words[words.length - 1] : undefined;
  for (const verb of [first, last && !ALSO_NOUNS.has(last) ? last : undefined]) {
    const action = verb === undefined ? undefined : TOOL_VERBS[verb];
    if (action) return { action, verb };
  }
  const opening = /^\s*([A-Za-z]+)/.exec(tool.description ?? '')?.[1]?.toLowerCase();
  const action = opening ? TOOL_VERBS[opening] : undefined;
  return action ? { action } : undefined;
}

/** Cues of each action in a request, English then Chinese. */
const CUES: Readonly<Record<Action, readonly RegExp[]>> = {
  cancel: [
    /\b(?:cancel\w*|call(?:ing)? (?:it |them )?off|delete|remove|withdraw|scrap|void|drop(?! (?:off|by|in|me|us)\b)|(?:can(?:no|')?t|won'?t|will not|couldn'?t) make it|no longer (?:need|want|coming|come)|(?:don'?t|do not) need (?:to \w+ )?(?:it|them|the|my|our)\b.*\b(?:any ?more|after all))\b/i,
    /取消|退订|退掉|退了|退票|退课|不(?:要|用|需要|去|来|住|上|看|租|订|定|约|参加|办|坐|练)了|去不了|来不了|算了|放弃|删除|删掉|删了|撤销|撤回|撤了|撤掉|作废/,
  ],
  change: [
    /\b(?:change|move|reschedul\w*|postpone|push (?:it|my|our|the|back|forward)|bring (?:it |my |our |the )?forward|switch|swap|update|modify|edit|amend|extend|shorten|downgrade|upgrade|instead of)\b/i,
    /改|换|调整|降档|升档|降级|升级|调到|调成|调一下|推迟|推后|推到|推一|推个|延后|延期|提前|挪|变更|延长|缩短|往后|往前|多住|多待|多留|续住|晚一[点些]|早一[点些]/,
  ],
  list: [
    /\b(?:list|all (?:of )?(?:my|our|the)|upcoming|coming up|so far|history)\b|\b(?:what|which|any) (?:\w+ )?(?!(?:does|is|was|has|this|its|always|yours)\b)\w{2,}[^\Wsu]s\b|\b(?:show|see|view|check)(?: me)? (?:my|our) (?:\w+ )?\w+[^s']s\b/i,
    /有什么|有啥|有哪些|哪些|哪几|列出|列一下|列个|所有|全部|一共|都有|名下|清单|列表|有几个|有多少个|都.{0,4}什么/,
  ],
  get: [
    /\b(?:what time|when(?:'s| is| was| does| do)|where (?:is|do|does|should|will)|which \w+ (?:is|was)|details? (?:of|for|on)|status of|how much (?:is|was|does|do|would|will)|what \w+ did (?:i|we)|who (?:is|was|'s)|what (?:is|was|'s) (?:my|our|the))\b/i,
    /几[号点月楼层天个位间时周]|什么时候|什么时间|哪天|哪一天|哪里|哪儿|在哪|是多少|多少钱|是哪|是谁|来着|详情|进度|怎么样了|(?:怎么|为什么|咋)?还没(?:到|来|收到|送到|发货)|了(?:没有|没|吗)[?？]?\s*$/,
  ],
  create: [
    /(?<!\bdid (?:i|we) )\b(?:book|reserve|rent|(?<!\b(?:my|our|your|the|a|this|that) )schedule|arrange|write|save|draft|send(?! (?:me|us)\b)|join|make (?:a|an|me a) (?:booking|reservation|appointment)|sign (?:me |us )?up|put (?:me|us) down|register|enrol+|i'?d like (?:a|an|to book)|get me (?:a|an)|set (?:\w+ )?up)\b/i,
    // A booking word after 的/把/那/这/单 … is the thing booked, and 订的/订了/订过 one booked already.
    /(?<![的把那这么些个单次有大确一决固肯规设指预])(?:预订|预定|预约|订|定|约|安排|报名|报个|报一|挂号|挂个|登记|办理|申请|租|留个|留一|开个|开一|占个|占一)(?![的了过单期金义律])|写|保存|生成|发送|记到|记下|下单|下(?:个|一个|一)(?:寄件|快递|订)?单|买(?![的了过])|(?<![需还不])要[一两][个张间份位辆节桌]|(?:想|要|打算)(?:上|去|参加|报|约|订|定|挂|租|住|看(?![看一下]))/,
  ],
};

/** Asking to look something up ("查一下", "show me"): a read, of one record or of a list. */
const LOOK_UP = [
  /\b(?:look up|check(?![- ]?(?:in|out)\b)|show me|let me see)\b/i,
  /(?<![检调])查|看看|看一下|确认一下/,
];

/** Asking whether something exists ("有没有", "is there"): a read, when nothing else is asked. */
const EXISTS = [
  /\b(?:is there|are there|do you have|have you got|any (?:free|available|open))\b/i,
  /有没有|是否有|还有没有|有空|有.{1,8}吗[?？]?\s*$/,
];

/** A record the requester has made already ("我订的", "the booking I made"): a question reads it. */
const MADE = [
  /\b(?:(?:i|we) (?:booked|reserved|made|rented)|(?:my|our) (?:booking|reservation|appointment))\b/i,
  /(?:预订|预定|预约|订|约|租|借|报|买|挂)(?:的|了|过)|我(?:的|那个|那)(?:预订|预定|预约|订单)/,
];

const QUESTION = /[?？吗呢]\s*$|^\s*(?:is|are|do|does|did|when|where|what|which|how)\b|几|多少|哪|什么|谁/i;

/** A booking word asked of someone ("帮我订", "我想预约") is a verb, whatever else the request asks. */
const ASKED_TO_BOOK =
  /(?:帮我|给我|替我|请|我想|我要)(?:预订|预定|预约|订|定|约|安排|报名|挂|办理|申请|租|留个|留一|开个|开一|占)/;

/** Words that join a further action to a first one. */
const FURTHER = /再|然后|接着|之后|并且|同时|另外|还要|\b(?:and|then|also)\b/i;

/** Every cue, matching all its occurrences. */
const ALL_CUES = [...Object.values(CUES).flat(), ...LOOK_UP, ...EXISTS].map(
  (r) => new RegExp(r.source, r.flags.includes('g') ? r.flags : `${r.flags}g`),
);

/**
 * The English words of a request's cues ("call off", "push it back", "is there"), lower case: they say
 * what to do, not about what.
 */
export function cueWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const cue of ALL_CUES) {
    for (const m of text.matchAll(cue)) {
      for (const w of m[0].toLowerCase().split(/[^a-z]+/)) if (w) out.add(w);
    }
  }
  return out;
}

const some = (cues: readonly RegExp[], text: string) => cues.some((r) => r.test(text));

/** Where a request first gives one of the cues, if it does. */
function firstCue(cues: readonly RegExp[], text: string): number | undefined {
  const at = cues.map((r) => r.exec(text)?.index).filter((i) => i !== undefined);
  return at.length > 0 ? Math.min(...at) : undefined;
}

/**
 * The actions a request asks for, by its cues. A request that cancels, changes or asks about something
 * names the thing with booking words before the verb ("把预订取消"), so there they do not ask to create one;
 * a request for a list ("有哪些", "what … do I have") asks for more than one record's details. Looking
 * something up or asking whether it exists reads, and so does a question about a record made already.
 */
export function requestActions(text: string): Set<Action> {
  const at = new Map(ACTIONS.map((action) => [action, firstCue(CUES[action], text)]));
  const found = new Set(ACTIONS.filter((action) => at.get(action) !== undefined));
  // A booking word names the thing acted on or asked about ("把预订取消", "有哪些预订", "预订是几点"),
  // unless a further action follows the first one ("先取消周四的，再预约周五的").
  const acted = Math.min(...(['cancel', 'change', 'list', 'get'] as const).map((a) => at.get(a) ?? Infinity));
  const created = at.get('create');
  if (created !== undefined && acted < Infinity && !ASKED_TO_BOOK.test(text)) {
    const between = text.slice(Math.min(acted, created), Math.max(acted, created));
    if (!FURTHER.test(between)) found.delete('create');
  }
  if (found.has('list')) found.delete('get');
  const lookedAt = !found.has('get') && !found.has('list');
  if (lookedAt && some(LOOK_UP, text)) ['get', 'list'].forEach((a) => found.add(a as Action));
  // Whether something exists ("还有票吗", "is there a copy") asks to search what there is.
  else if (lookedAt && found.size === 0 && some(EXISTS, text)) found.add('list');
  if (found.size === 0 && some(MADE, text) && QUESTION.test(text)) found.add('get');
  return found;
}
