import o200kBase from 'js-tiktoken/ranks/o200k_base';

/**
 * Longest run of bytes merged as one piece. The encoding's pieces are words, and byte-pair merging is
 * quadratic in a piece's length, so one 40 000-letter "word" would otherwise hold the event loop for
 * minutes. No o200k token is longer, so a longer piece is cut (between characters) at little cost.
 */
const MAX_PIECE_BYTES = 128;

/**
 * Texts up to this many UTF-8 bytes are counted exactly (a few ms at worst); longer ones are estimated
 * from evenly spaced windows of about that total size, so no count costs more than that.
 */
const EXACT_COUNT_MAX_BYTES = 8_192;

/** Windows sampled from a text too long to count exactly. */
const ESTIMATE_WINDOWS = 16;

interface Encoding {
  /** Rank of each token, keyed by its bytes as a latin1 string. */
  ranks: Map<string, number>;
  pattern: RegExp;
}

let encoding: Encoding | undefined;

function loadEncoding(): Encoding {
  const ranks = new Map<string, number>();
  for (const line of o200kBase.bpe_ranks.split('\n')) {
    const [, offset, ...tokens] = line.split(' ');
    if (offset === undefined) continue;
    const first = Number.parseInt(offset, 10);
    tokens.forEach((token, i) => ranks.set(Buffer.from(token, 'base64').toString('latin1'), first + i));
  }
  return { ranks, pattern: new RegExp(o200kBase.pat_str, 'gu') };
}

/** Tokens byte-pair merging makes of one piece: always merge the lowest-ranked adjacent pair first. */
function mergedLength(bytes: string, ranks: Map<string, number>): number {
  if (bytes.length === 0) return 0;
  if (bytes.length === 1 || ranks.has(bytes)) return 1;
  // starts[0..parts] are where each part begins (plus the end); pairRank[i] ranks part i joined with i + 1.
  const starts = new Int32Array(bytes.length + 1).map((_, i) => i);
  const pairRank = new Float64Array(bytes.length);
  let parts = bytes.length;
  const rankOf = (i: number): number =>
    i + 1 < parts ? (ranks.get(bytes.slice(starts[i], starts[i + 2])) ?? Infinity) : Infinity;
  for (let i = 0; i < parts - 1; i++) pairRank[i] = rankOf(i);
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i < parts - 1; i++) {
      if (pairRank[i]! < bestRank) {
        bestRank = pairRank[i]!;
        best = i;
      }
    }
    if (best < 0) return parts;
    starts.copyWithin(best + 1, best + 2, parts + 1);
    pairRank.copyWithin(best + 1, best + 2, parts);
    parts--;
    pairRank[best] = rankOf(best);
    if (best > 0) pairRank[best - 1] = rankOf(best - 1);
  }
}

/**
 * A piece's UTF-8 bytes as latin1 strings of at most MAX_PIECE_BYTES each, cut between characters
 * (cutting inside one would cost a token or two more per cut). ASCII pieces, most of them, as they are.
 */
function* utf8Cuts(piece: string): Generator<string> {
  let start = 0;
  let size = 0;
  for (let i = 0; i < piece.length; i++) {
    const c = piece.charCodeAt(i);
    const isPair = c >= 0xd800 && c <= 0xdbff && i + 1 < piece.length;
    const width = c < 0x80 ? 1 : c < 0x800 ? 2 : isPair ? 4 : 3;
    if (size + width > MAX_PIECE_BYTES) {
      yield latin1(piece.slice(start, i));
      start = i;
      size = 0;
    }
    size += width;
    if (isPair) i++;
  }
  yield latin1(piece.slice(start));
}

function latin1(text: string): string {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(text) ? text : Buffer.from(text, 'utf8').toString('latin1');
}

function countExactly(text: string, enc: Encoding): number {
  let tokens = 0;
  enc.pattern.lastIndex = 0;
  for (let m = enc.pattern.exec(text); m !== null; m = enc.pattern.exec(text)) {
    for (const bytes of utf8Cuts(m[0])) tokens += mergedLength(bytes, enc.ranks);
  }
  return tokens;
}

/** A slice that does not split a surrogate pair at either end. */
function window(text: string, start: number, end: number): string {
  const isLow = (i: number) => {
    const c = text.charCodeAt(i);
    return c >= 0xdc00 && c <= 0xdfff;
  };
  return text.slice(isLow(start) ? start + 1 : start, isLow(end) ? end + 1 : end);
}

/**
 * Tokens of a text with the o200k_base encoding (GPT-4o family), ranks loaded once from js-tiktoken.
 * Exact up to 8 KiB of UTF-8 (but for words over 128 bytes, counted in cuts); longer texts are
 * estimated from 16 evenly spaced windows (within a few percent on prose, code and JSON), never above
 * their byte length, so a count costs a few ms whatever the input. Special-token markup such as
 * `<|endoftext|>` counts as plain text.
 */
export function countTokens(text: string): number {
  encoding ??= loadEncoding();
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= EXACT_COUNT_MAX_BYTES) return countExactly(text, encoding);
  const width = Math.ceil(((EXACT_COUNT_MAX_BYTES / ESTIMATE_WINDOWS) * text.length) / bytes);
  const step = (text.length - width) / (ESTIMATE_WINDOWS - 1);
  let sampledTokens = 0;
  let sampledBytes = 0;
  for (let k = 0; k < ESTIMATE_WINDOWS; k++) {
    const start = Math.floor(k * step);
    const part = window(text, start, start + width);
    sampledTokens += countExactly(part, encoding);
    sampledBytes += Buffer.byteLength(part, 'utf8');
  }
  return Math.min(bytes, Math.ceil((sampledTokens / Math.max(1, sampledBytes)) * bytes));
}

/**
 * Whether a text has more than `threshold` tokens. A token is at least one UTF-8 byte, so texts whose
 * byte length is under the threshold are answered without tokenizing. Beyond 8 KiB the count is
 * `countTokens`'s estimate.
 */
export function exceedsTokens(text: string, threshold: number): { exceeds: boolean; tokens?: number } {
  if (Buffer.byteLength(text, 'utf8') <= threshold) return { exceeds: false };
  const tokens = countTokens(text);
  return { exceeds: tokens > threshold, tokens };
}
