// What the playground tried, as a case of an eval dataset (docs/evals.md): the request and the
// expectations its run met, for `agent-reach eval` to check again.

/** The tools a run's calls reached, in order: refused and unknown calls are not expectations. */
export const toolsReached = (events) =>
  events.filter((e) => e.type === 'tool_result' && e.ok).map((e) => e.tool);

/** The first sentence (or line) of an answer, at most `max` characters: a fragment the answer must contain. */
export function answerFragment(answer, max = 60) {
  const first = String(answer ?? '')
    .trim()
    .split(/\n|(?<=[.!?])\s|(?<=[。！？])/)[0]
    ?.trim();
  if (!first) return '';
  return first.length <= max ? first : first.slice(0, max).replace(/\s+\S*$/, '');
}

/** A case id from a run id: the dataset's id pattern (`[A-Za-z0-9_.:-]{1,128}`). */
export const caseIdOf = (runId) =>
  `playground-${String(runId)
    .replace(/[^A-Za-z0-9_.:-]/g, '-')
    .slice(-40)}`;

/**
 * The case: `request` is what was sent ({ agent, input, model?, output_schema?, history? }), `choice`
 * what the person chose to expect ({ id, contains, tools: 'in_order' | 'as_set' | 'none', status }).
 */
export function evalCase(request, run, events, choice) {
  const tools = toolsReached(events);
  const expect = {};
  if (choice.status && run?.status) expect.status = run.status;
  if (tools.length && choice.tools === 'in_order') expect.tools_in_order = tools;
  if (tools.length && choice.tools === 'as_set') expect.tools_called = [...new Set(tools)];
  const contains = choice.contains.trim();
  if (contains) expect.answer = { contains: [contains] };
  return {
    id: choice.id.trim() || caseIdOf(run?.run_id ?? 'case'),
    agent: request.agent,
    input: request.input,
    ...(request.model ? { model: request.model } : {}),
    ...(request.history?.length ? { history: request.history } : {}),
    ...(request.output_schema ? { output_schema: request.output_schema } : {}),
    expect,
  };
}

/** A dataset file of one case, in YAML: `agent-reach eval` reads it as is, and its case pastes into another. */
export const datasetYaml = (c) => `name: playground\ncases:\n${yaml([c], 1)}`;

/** One line of a JSONL dataset (a case a line). */
export const datasetJsonl = (c) => `${JSON.stringify(c)}\n`;

// Strings are written as JSON strings: a YAML double-quoted scalar, so no value is ever read as another type.
const scalar = (v) => (typeof v === 'string' ? JSON.stringify(v) : v === undefined ? 'null' : String(v));
const isPlain = (v) => v === null || typeof v !== 'object';
const emptyOf = (v) => (Array.isArray(v) ? '[]' : '{}');
// Words YAML 1.1 readers take for booleans or null: quoted even as keys.
const RESERVED = new Set(['null', 'true', 'false', 'yes', 'no', 'on', 'off', 'y', 'n']);
const bareKey = (k) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && !RESERVED.has(k.toLowerCase());

/** A value as block YAML, indented by `depth` steps of two spaces; each line ends with a newline. */
function yaml(value, depth) {
  const pad = '  '.repeat(depth);
  if (Array.isArray(value))
    return value
      .map((item) => {
        if (isPlain(item)) return `${pad}- ${scalar(item)}\n`;
        if (Object.keys(item).length === 0) return `${pad}- ${emptyOf(item)}\n`;
        // The item's first line follows the dash; the rest keep its indentation.
        return `${pad}- ${yaml(item, depth + 1).slice(pad.length + 2)}`;
      })
      .join('');
  return Object.entries(value)
    .map(([k, v]) => {
      const key = bareKey(k) ? k : JSON.stringify(k);
      if (isPlain(v)) return `${pad}${key}: ${scalar(v)}\n`;
      if (Object.keys(v).length === 0) return `${pad}${key}: ${emptyOf(v)}\n`;
      return `${pad}${key}:\n${yaml(v, depth + 1)}`;
    })
    .join('');
}
