import { html } from 'htm/preact';
import { api } from './api.js';
import { When, duration, useNow } from './format.js';
import { usePolled } from './use-polled.js';

const LIVE_MS = 5000;
const runHref = (id) => `#/runs/${encodeURIComponent(id)}`;
const workflowHref = (id) => `#/workflows/${encodeURIComponent(id)}`;
const OUTCOMES = {
  started: 'started',
  skipped_overlap: 'skipped: last run still going',
  skipped_late: 'skipped: later than the catch-up window',
  failed: 'failed',
};

/** How a schedule fires: its cron expression and zone, or its interval. */
const timing = (s) => (s.cron ? `${s.cron} (${s.timezone})` : `every ${duration(s.every_ms)}`);

/** The schedule's last firing: when, what became of it, its run. */
function LastFiring({ firing, now }) {
  if (!firing) return html`<span class="muted">none yet</span>`;
  return html`<${When} ms=${firing.scheduled_at} now=${now} /> ${OUTCOMES[firing.outcome] ?? firing.outcome}${
    firing.run_id ? html` <a href=${runHref(firing.run_id)} class="mono">${firing.run_id}</a>` : null
  }${firing.workflow_id ? html` <a href=${workflowHref(firing.workflow_id)} class="mono">${firing.workflow_id}</a>` : null}`;
}

/** The key's schedules with their timing, overlap policy, next and last firings, kept live. */
export function SchedulesPage() {
  const now = useNow(true, LIVE_MS);
  const { data: list, error } = usePolled(() => api.schedules(), LIVE_MS);
  return html`<section>
    <h1>Schedules <span class="live" title="refreshed every 5 s">live</span></h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    <div class="table-wrap" tabindex="0" role="region" aria-label="Schedules"><table class="runs schedules">
      <thead><tr><th scope="col">Schedule</th><th scope="col">Agent or workflow</th><th scope="col">Timing</th><th scope="col">Overlap</th><th scope="col">Next firing</th><th scope="col">Last firing</th></tr></thead>
      <tbody>
        ${(list?.schedules ?? []).map(
          (s) => html`<tr>
            <td class="mono">${s.schedule_id}</td>
            <td>${s.agent ?? html`workflow ${s.workflow}`}</td>
            <td class="mono">${timing(s)}</td>
            <td>${s.overlap.replaceAll('_', ' ')}</td>
            <td>${s.paused ? html`<span class="badge warn">paused</span>` : html`<${When} ms=${s.next_firing_at} now=${now} />`}</td>
            <td><${LastFiring} firing=${s.firings[0]} now=${now} /></td>
          </tr>`,
        )}
      </tbody>
    </table></div>
    ${list && list.schedules.length === 0 ? html`<p class="muted">No schedules.</p>` : null}
  </section>`;
}
