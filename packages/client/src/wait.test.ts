import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { sleep } from './wait.js';

describe('the wait between reconnects', () => {
  it('leaves no listener on the follow signal once it has waited, however many times it waits', async () => {
    const controller = new AbortController();
    for (let i = 0; i < 20; i += 1) await sleep(1, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('ends at once when the follow signal aborts', async () => {
    const controller = new AbortController();
    const waited = sleep(60_000, controller.signal);
    controller.abort();
    await expect(waited).resolves.toBeUndefined();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
