import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, followEvents } from './api.js';
import { Approvals } from './approvals.js';
import { Code, Prose, Reason, Status, isFinal, useNow } from './format.js';
import { SaveCase } from './save-case.js';
import { useFollowed } from './use-followed.js';
import { Waterfall } from './waterfall.js';
import './playground.css';

/** Metadata of every run the playground starts: they can be listed apart (`?metadata=source=playground`). */
const METADATA = { source: 'playground' };
/** The name of the variant a run carries when overrides are given. */
const VARIANT = 'playground';
const REFRESH_ON = new Set([
  'approval_requested',
  'approval_decided',
  'run_finished',
  'tool_result',
  'llm_request',
]);

/** The text streamed so far of the run's latest turn: its deltas of the highest attempt, in order. */
function streamedText(events) {
  const deltas = events.filter((e) => e.type === 'answer_delta' && e.content);
  const last = deltas[deltas.length - 1];
  if (!last) return { text: '', parts: 0 };
  const mine = deltas.filter((d) => d.turn === last.turn && d.attempt === last.attempt);
  return { text: mine.map((d) => d.content).join(''), parts: mine.length };
}

/** Cancel for a live run (the API's `POST /v1/runs/{id}/cancel`), and what the API said. */
function Cancel({ run, onDone }) {
  const [said, setSaid] = useState('');
  if (run.cancel_requested) return html`<p class="muted">Cancelling…</p>`;
  const cancel = () =>
    api.cancelRun(run.run_id).then(onDone, (e) => setSaid(`${e.status} ${e.code}: ${e.message}`));
  return html`<p><button type="button" class="secondary" onClick=${cancel}>Cancel run</button>${said ? html` <span class="error" role="alert">${said}</span>` : null}</p>`;
}

/** A run started from the playground, followed live: its answer as it streams, its waterfall as it grows. */
function TriedRun({ tried, latest }) {
  const { runId, request } = tried;
  const { record: run, events, error, reload } = useFollowed(runId, api.run, followEvents, REFRESH_ON);
  const live = run !== undefined && !isFinal(run.status);
  const now = useNow(live);
  const streamed = streamedText(events);
  if (error && !run) return html`<p class="error" role="alert">${error}</p>`;
  if (!run) return html`<p class="muted">Starting ${runId}…</p>`;
  const start = events[0]?.at ?? run.created_at;
  const pending = run.pending_approvals.map((a) => ({ ...a, run_id: run.run_id, agent: run.agent }));
  const answer = isFinal(run.status) && run.answer ? run.answer : streamed.text;
  return html`<article class="tried" data-run=${runId} aria-labelledby=${`tried-${runId}`}>
    <h2 id=${`tried-${runId}`}>
      ${latest ? '' : html`<span class="muted">Earlier: </span>`}<a class="mono" href=${`#/runs/${encodeURIComponent(runId)}`}>${runId}</a> <${Status} status=${run.status} />
    </h2>
    <div class="box"><div class="code-label">Input</div><${Prose} text=${request.input} /></div>
    <div class="box answer playground-answer" aria-busy=${live}>
      <div class="code-label">Answer${live ? ' (streaming…)' : ''}${streamed.parts ? html` <span class="muted streamed">streamed in ${streamed.parts} part${streamed.parts === 1 ? '' : 's'}</span>` : null}</div>
      ${answer ? html`<${Prose} text=${answer} />` : html`<span class="muted">${live ? 'Waiting for the model…' : 'No answer.'}</span>`}
    </div>
    ${run.output !== undefined ? html`<div class="box answer output"><${Code} value=${run.output} label="Output (JSON)" /></div>` : null}
    ${run.reason && run.status !== 'succeeded' ? html`<p class="error"><${Reason} code=${run.reason} /> <span class="mono muted">${run.reason}</span></p>` : null}
    ${live ? html`<${Cancel} run=${run} onDone=${reload} />` : null}
    ${pending.length ? html`<h3>Waiting for a decision</h3><${Approvals} items=${pending} onDecided=${reload} />` : null}
    ${
      latest
        ? html`<h3 id="waterfall-title">Waterfall</h3>
          <${Waterfall} events=${events} start=${start} end=${live ? now : undefined} />`
        : null
    }
    ${isFinal(run.status) ? html`<${SaveCase} request=${request} run=${run} events=${events} />` : null}
  </article>`;
}

/** Parses an optional JSON object field: undefined when empty, else the object or an error naming `what`. */
function parseObject(text, what, kind) {
  if (!text.trim()) return { value: undefined };
  try {
    const value = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return { value };
    return { error: `The ${what} must be a JSON object (${kind}).` };
  } catch (e) {
    return { error: `The ${what} is not JSON: ${e.message}` };
  }
}

/**
 * The playground: start a run (or a session's next message) of an agent with an input, an optional output
 * schema and a model among those the API accepts, through `/v1` with the session cookie and the
 * inspector's header, so the API's own checks decide (a key limited to other agents is refused by it).
 */
export function PlaygroundPage({ agents, agentName }) {
  const [agent, setAgent] = useState(agentName ?? '');
  const [models, setModels] = useState([]);
  const [model, setModel] = useState('');
  const [input, setInput] = useState('');
  const [schemaText, setSchemaText] = useState('');
  const [overridesText, setOverridesText] = useState('');
  const [inSession, setInSession] = useState(false);
  const [sessionId, setSessionId] = useState(undefined);
  const [tried, setTried] = useState([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  useEffect(() => {
    api.models().then(
      (r) => setModels(r.models),
      () => setModels([]),
    );
  }, []);
  useEffect(() => {
    if (agentName) setAgent(agentName);
    else if (!agent && agents[0]) setAgent(agents[0].name);
  }, [agentName, agents]);
  const reset = () => {
    setSessionId(undefined);
    setTried([]);
  };
  const names = agents.map((a) => a.name);
  // An agent named in the address is offered even when this key does not list it: the API says why not.
  if (agent && !names.includes(agent)) names.unshift(agent);

  const send = async (e) => {
    e.preventDefault();
    setError('');
    const { value: schema, error: bad } = parseObject(schemaText, 'output schema', 'a JSON Schema');
    if (bad) return setError(bad);
    const { value: overrides, error: wrong } = parseObject(
      overridesText,
      'variant',
      "overrides of the agent's configuration",
    );
    if (wrong) return setError(wrong);
    if (!input.trim()) return setError('Write an input for the agent.');
    const body = {
      agent,
      input,
      ...(model ? { model } : {}),
      ...(schema ? { output_schema: schema } : {}),
      ...(overrides ? { variant: { name: VARIANT, overrides } } : {}),
      metadata: METADATA,
    };
    setBusy(true);
    try {
      let run;
      if (inSession) {
        const id = sessionId ?? (await api.openSession(agent)).session_id;
        setSessionId(id);
        run = await api.sendMessage(id, body);
      } else run = await api.startRun(body);
      const history = inSession ? tried.map((t) => t.request.input) : [];
      const request = { agent, input, model, output_schema: schema, history, overrides };
      setTried((list) => [...(inSession ? list : []), { runId: run.run_id, request }]);
      if (inSession) setInput('');
    } catch (err) {
      setError(`${err.status ? `${err.status} ${err.code}: ` : ''}${err.message}`);
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="playground">
    <h1>Playground</h1>
    <p class="muted">Runs started here are ordinary runs of your key (tagged <span class="mono">source=playground</span>): the API checks them as any other.</p>
    <form class="playground-form" onSubmit=${send} aria-label="Start a run">
      <div class="playground-row">
        <label for="pg-agent">Agent</label>
        <select id="pg-agent" value=${agent} onChange=${(e) => {
          setAgent(e.currentTarget.value);
          reset();
        }}>
          ${names.map((n) => html`<option value=${n}>${n}</option>`)}
        </select>
        <label for="pg-model">Model</label>
        <select id="pg-model" value=${model} onChange=${(e) => setModel(e.currentTarget.value)}>
          <option value="">the agent's model</option>
          ${models.map((m) => html`<option value=${m}>${m}</option>`)}
        </select>
        <label class="check"><input type="checkbox" checked=${inSession} onChange=${(e) => {
          setInSession(e.currentTarget.checked);
          reset();
        }} /> Keep a session</label>
      </div>
      <label for="pg-input">Input</label>
      <textarea id="pg-input" rows="3" value=${input} onInput=${(e) => setInput(e.currentTarget.value)}></textarea>
      <details class="playground-schema">
        <summary>Output schema <span class="muted">(optional)</span></summary>
        <label for="pg-schema">JSON Schema the answer must match</label>
        <textarea id="pg-schema" class="mono" rows="5" value=${schemaText} placeholder='{"type": "object", "properties": {…}}' onInput=${(e) => setSchemaText(e.currentTarget.value)}></textarea>
      </details>
      <details class="playground-schema">
        <summary>Variant <span class="muted">(optional: a key allowed variants)</span></summary>
        <label for="pg-variant">Configuration overrides for this run (JSON: instructions, tools, loop…)</label>
        <textarea id="pg-variant" class="mono" rows="4" value=${overridesText} placeholder='{"instructions": "…", "tools": {"query_weather": {"description": "…"}}}' onInput=${(e) => setOverridesText(e.currentTarget.value)}></textarea>
      </details>
      ${error ? html`<p class="error" role="alert">${error}</p>` : null}
      <div class="decide">
        <button type="submit" disabled=${busy || !agent}>${inSession && sessionId ? 'Send' : inSession ? 'Start session' : 'Start run'}</button>
        ${sessionId ? html`<span class="muted">session <span class="mono">${sessionId}</span></span> <button type="button" class="secondary" onClick=${reset}>New session</button>` : null}
      </div>
    </form>
    ${[...tried].reverse().map((t, i) => html`<${TriedRun} key=${t.runId} tried=${t} latest=${i === 0} />`)}
  </section>`;
}
