import { createHash } from 'node:crypto';

/** A small seeded generator (mulberry32) so one seed gives one sequence. */
export class Draws {
  #state: number;

  constructor(...parts: Array<string | number>) {
    this.#state = parseInt(createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 8), 16);
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
}
