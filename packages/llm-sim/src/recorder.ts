import { appendFileSync } from 'node:fs';
import { UNRECORDED_HEADERS } from './constants.js';
import type { RecordedRequest } from './types.js';

/** Keeps every chat request in memory and, when a file is given, appends it there as one JSON line. */
export class Recorder {
  /** Recorded requests, oldest first; cleared in place so held references stay live. */
  readonly requests: RecordedRequest[] = [];

  constructor(private readonly file?: string) {}

  record(entry: RecordedRequest): void {
    this.requests.push(entry);
    // Written synchronously so the line exists by the time the client has its answer.
    if (this.file !== undefined) appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }

  clear(): void {
    this.requests.length = 0;
  }
}

/** Request headers as recorded: lower-cased names, credentials left out, repeated values joined. */
export function recordableHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (value === undefined || UNRECORDED_HEADERS.includes(key)) continue;
    out[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
