import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { CopyButton } from './format.js';
import { answerFragment, caseIdOf, datasetJsonl, datasetYaml, evalCase, toolsReached } from './eval-case.js';

const FORMATS = {
  yaml: { label: 'YAML dataset', ext: 'yaml', type: 'application/yaml', write: datasetYaml },
  jsonl: { label: 'JSONL line', ext: 'jsonl', type: 'application/x-ndjson', write: datasetJsonl },
};

/** Saves `text` as a file named `name`, from the page: a link to a blob, clicked and let go. */
function download(text, name, type) {
  const url = URL.createObjectURL(new window.Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/** The eval command for the file, with the run's overrides as a variant compared against the baseline. */
const command = (file, overrides) =>
  overrides
    ? `agent-reach eval ${file} --variant baseline --variant playground='${JSON.stringify(overrides).replaceAll("'", "'\\''")}'`
    : `agent-reach eval ${file}`;

/**
 * "Save as eval case": the request that was tried and what its run did, as a case of an eval dataset
 * (docs/evals.md), with the expectations a person picks (the answer fragment, the tools in order or as a
 * set, the status), to copy or download.
 */
export function SaveCase({ request, run, events }) {
  const [id, setId] = useState(caseIdOf(run.run_id));
  const [contains, setContains] = useState(answerFragment(run.answer));
  const [tools, setTools] = useState('in_order');
  const [status, setStatus] = useState(true);
  const [format, setFormat] = useState('yaml');
  const reached = toolsReached(events);
  const c = evalCase(request, run, events, { id, contains, tools, status });
  const f = FORMATS[format];
  const text = f.write(c);
  const field = (name) => `case-${run.run_id}-${name}`;
  return html`<details class="save-case">
    <summary>Save as eval case</summary>
    <div class="save-case-body">
      <div class="save-case-fields">
        <label for=${field('id')}>Case id</label>
        <input id=${field('id')} value=${id} maxlength="128" onInput=${(e) => setId(e.currentTarget.value)} />
        <label for=${field('contains')}>The answer must contain</label>
        <input id=${field('contains')} value=${contains} onInput=${(e) => setContains(e.currentTarget.value)} />
        <label for=${field('tools')}>Tools${reached.length ? html` <span class="muted">(${reached.join(', ')})</span>` : ''}</label>
        <select id=${field('tools')} value=${tools} disabled=${reached.length === 0} onChange=${(e) => setTools(e.currentTarget.value)}>
          <option value="in_order">called in this order</option>
          <option value="as_set">called, in any order</option>
          <option value="none">no expectation</option>
        </select>
        <label class="check"><input type="checkbox" checked=${status} onChange=${(e) => setStatus(e.currentTarget.checked)} /> The run ends <span class="mono">${run.status}</span></label>
      </div>
      <fieldset class="save-case-format">
        <legend>Format</legend>
        ${Object.entries(FORMATS).map(
          ([k, v]) =>
            html`<label class="check"><input type="radio" name=${field('format')} value=${k} checked=${format === k} onChange=${() => setFormat(k)} /> ${v.label}</label>`,
        )}
      </fieldset>
      <div class="code">
        <div class="code-label">
          <span>Eval case (${f.label})</span>
          <span class="payload-actions">
            <${CopyButton} text=${text} label="eval case" />
            <button type="button" class="small secondary" onClick=${() => download(text, `${c.id}.${f.ext}`, f.type)}>Download</button>
          </span>
        </div>
        <pre class="raw eval-case" tabindex="0" aria-label="Eval case">${text}</pre>
      </div>
      <p class="muted small-text">Run it with <code class="eval-command">${command(`${c.id}.${f.ext}`, request.overrides)}</code>, or paste the case into a dataset.</p>
    </div>
  </details>`;
}
