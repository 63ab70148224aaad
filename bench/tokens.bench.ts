/**
 * What counting a prompt's tokens costs, by size and kind of text: one long word (the worst case for
 * byte-pair merging), Chinese without spaces, and ordinary prose. Prints milliseconds per count (median
 * of a few rounds, after a warm-up that loads the ranks) and the count.
 *
 * For reference, js-tiktoken's own `encode` took 6.6 s for 10 000 × "o" and 66 s for 20 000 on the
 * same kind of machine, and 146 ms for 160 000 characters of prose.
 */
import { countTokens } from '@agent-reach/scheduler/internal';
import { median } from './measure.js';

const SIZES = [1_000, 10_000, 40_000, 1_000_000];
const ROUNDS = 9;
const prose = 'The quick brown fox jumps over the lazy dog, then 查一下上海天气 and writes {"a": 12345}. ';
const kinds: Record<string, (n: number) => string> = {
  'one long word': (n) => 'o'.repeat(n),
  'Chinese, no spaces': (n) => '中文字符'.repeat(Math.ceil(n / 4)).slice(0, n),
  prose: (n) => prose.repeat(Math.ceil(n / prose.length)).slice(0, n),
};

const started = performance.now();
countTokens('warm up');
console.log(`ranks loaded in ${(performance.now() - started).toFixed(0)} ms`);

const rows = [];
for (const [kind, make] of Object.entries(kinds)) {
  for (const size of SIZES) {
    const text = make(size);
    const times: number[] = [];
    let tokens = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t = performance.now();
      tokens = countTokens(text);
      times.push(performance.now() - t);
    }
    rows.push({
      kind,
      chars: size,
      tokens,
      medianMs: Number(median(times).toFixed(2)),
      minMs: Number(Math.min(...times).toFixed(2)),
    });
  }
}
console.table(rows);
