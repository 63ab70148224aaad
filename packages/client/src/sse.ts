/** One dispatched Server-Sent Events message. */
export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * Parses a `text/event-stream` body (the WHATWG rules: `\n`, `\r\n` or `\r` line ends, `:` comments,
 * multi-line `data`, a blank line dispatches). Cancelling the iteration cancels the body.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // A trailing `\r` may be the first half of a `\r\n` split across chunks: keep it for the next one.
      const held = !done && buffer.endsWith('\r') ? '\r' : '';
      const lines = (held ? buffer.slice(0, -1) : buffer).split(/\r\n|\r|\n/);
      // The last piece is an unfinished line.
      buffer = (lines.pop() ?? '') + held;
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield { id, event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
