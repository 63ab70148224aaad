import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { Approvals } from './approvals.js';

const LIVE_MS = 2000;

/** Every call waiting for a person, in the runs this key may see, kept live. */
export function ApprovalsPage() {
  const [items, setItems] = useState(undefined);
  const [error, setError] = useState('');
  const load = () =>
    api.approvals().then(
      (r) => {
        setItems(r.approvals);
        setError('');
      },
      (e) => setError(e.message),
    );
  useEffect(() => {
    void load();
    const timer = setInterval(load, LIVE_MS);
    return () => clearInterval(timer);
  }, []);
  return html`<section>
    <h1>Approvals <span class="live">live</span></h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    ${items && items.length === 0 ? html`<p class="muted">Nothing is waiting for a decision.</p>` : null}
    ${items ? html`<${Approvals} items=${items} onDecided=${load} showRun=${true} />` : null}
  </section>`;
}
