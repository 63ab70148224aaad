import { html } from 'htm/preact';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { AgentsPage } from './agents-page.js';
import { ApprovalsPage } from './approvals-page.js';
import { OverviewPage } from './overview-page.js';
import { RunPage } from './run-page.js';
import { RunsPage } from './runs-page.js';
import { WorkflowPage, WorkflowsPage } from './workflows-page.js';
import { SchedulesPage } from './schedules-page.js';
import { PlaygroundPage } from './playground-page.js';
import { EvalsPage } from './evals-page.js';
import './styles.css';

/** Pages live in the hash (`#/runs/<id>`): nothing secret is ever in a URL, and the server serves one page. */
function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return { page: parts[0] || 'runs', id: parts[1] };
}

function Login({ onIn }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    try {
      await api.login(key);
      setKey('');
      onIn();
    } catch (err) {
      setError(err.message);
    }
  };
  return html`<form class="login" onSubmit=${submit}>
    <h1>Agent-Reach inspector</h1>
    <p class="muted">Sign in with an API key. It is checked once and never kept in the browser: a session cookie is.</p>
    <label>API key<input type="password" name="key" autocomplete="current-password" value=${key} onInput=${(e) => setKey(e.currentTarget.value)} /></label>
    ${error ? html`<p class="error">${error}</p>` : null}
    <button type="submit">Sign in</button>
  </form>`;
}

function App() {
  const [me, setMe] = useState(undefined);
  const [agents, setAgents] = useState([]);
  const [hasWorkflows, setHasWorkflows] = useState(false);
  const route = useRoute();
  const check = () => api.me().then(setMe, () => setMe(null));
  const reloadAgents = () =>
    api.agents().then(
      (r) => setAgents(r.agents),
      () => undefined,
    );
  useEffect(() => {
    void check();
    const out = () => setMe(null);
    window.addEventListener('ar-logged-out', out);
    return () => window.removeEventListener('ar-logged-out', out);
  }, []);
  useEffect(() => {
    setHasWorkflows(false);
    if (me) void reloadAgents();
  }, [me]);
  useEffect(() => {
    if (!me || hasWorkflows) return;
    // The Workflows link appears once this key can see a workflow (the API lists none otherwise);
    // asked again on each page change until then, so a workflow started later shows up.
    void api.workflows({ limit: '1' }).then(
      (l) => setHasWorkflows(l.workflows.length > 0),
      () => undefined,
    );
  }, [me, route.page]);
  if (me === undefined) return html`<p class="muted pad">Loading…</p>`;
  if (me === null) return html`<${Login} onIn=${check} />`;
  const link = (page, label) =>
    html`<a href=${`#/${page}`} class=${route.page === page ? 'active' : ''} aria-current=${route.page === page ? 'page' : undefined}>${label}</a>`;
  const signOut = () => api.logout().finally(() => setMe(null));
  const lab =
    route.page === 'playground'
      ? html`<${PlaygroundPage} agents=${agents} agentName=${route.id} />`
      : route.page === 'evals'
        ? html`<${EvalsPage} evalId=${route.id} />`
        : undefined;
  return html`<div>
    <a class="skip" href="#main" onClick=${(e) => {
      e.preventDefault();
      document.getElementById('main')?.focus();
    }}>Skip to content</a>
    <header>
      <span class="brand">Agent-Reach</span>
      <nav aria-label="Pages">${link('overview', 'Overview')}${link('runs', 'Runs')}${link('approvals', 'Approvals')}${link('agents', 'Agents & tools')}${hasWorkflows || route.page === 'workflows' ? link('workflows', 'Workflows') : null}${link('schedules', 'Schedules')}${link('playground', 'Playground')}${link('evals', 'Evals')}</nav>
      <span class="who">${me.name}${me.agents ? html` <span class="muted">(${me.agents.join(', ')})</span>` : null}<button class="secondary" onClick=${signOut}>Sign out</button></span>
    </header>
    <main id="main" tabindex="-1">
      ${
        lab ??
        (route.page === 'runs' && route.id
          ? html`<${RunPage} runId=${route.id} />`
          : route.page === 'workflows'
            ? route.id
              ? html`<${WorkflowPage} workflowId=${route.id} />`
              : html`<${WorkflowsPage} />`
            : route.page === 'schedules'
              ? html`<${SchedulesPage} />`
              : route.page === 'approvals'
                ? html`<${ApprovalsPage} />`
                : route.page === 'overview'
                  ? html`<${OverviewPage} />`
                  : route.page === 'agents'
                    ? html`<${AgentsPage} agents=${agents} reloadAgents=${reloadAgents} />`
                    : html`<${RunsPage} agents=${agents} />`)
      }
    </main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app'));
