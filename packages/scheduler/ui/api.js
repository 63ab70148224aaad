// Requests of the inspector: same origin, the session cookie, and the header that marks its writes.

export class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: {
      ...(method === 'GET' ? {} : { 'x-agent-reach-ui': '1' }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 204) return undefined;
  const json = await res.json().catch(() => undefined);
  if (!res.ok) {
    if (res.status === 401) window.dispatchEvent(new Event('ar-logged-out'));
    throw new HttpError(res.status, json?.error?.code ?? 'HTTP', json?.error?.message ?? res.statusText);
  }
  return json;
}

export const api = {
  login: (key) => call('POST', '/ui/login', { key }),
  logout: () => call('POST', '/ui/logout'),
  me: () => call('GET', '/ui/api/me'),
  runs: (query) => call('GET', `/v1/runs?${new URLSearchParams(query)}`),
  run: (id) => call('GET', `/v1/runs/${encodeURIComponent(id)}`),
  agents: () => call('GET', '/v1/agents'),
  workflows: (query) => call('GET', `/v1/workflows?${new URLSearchParams(query)}`),
  workflow: (id) => call('GET', `/v1/workflows/${encodeURIComponent(id)}`),
  cancelWorkflow: (id) => call('POST', `/v1/workflows/${encodeURIComponent(id)}/cancel`),
  toolStats: () => call('GET', '/ui/api/tool-stats'),
  schedules: () => call('GET', '/v1/schedules'),
  overview: () => call('GET', '/ui/api/overview'),
  approvals: () => call('GET', '/ui/api/approvals'),
  models: () => call('GET', '/ui/api/models'),
  startRun: (body) => call('POST', '/v1/runs', body),
  cancelRun: (id) => call('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`),
  openSession: (agent) => call('POST', '/v1/sessions', { agent }),
  sendMessage: (sessionId, body) =>
    call('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/messages`, body),
  evals: () => call('GET', '/v1/evals'),
  evalReport: (id) => call('GET', `/v1/evals/${encodeURIComponent(id)}`),
  decide: (runId, toolCallId, decision, reason) =>
    call('POST', `/v1/runs/${encodeURIComponent(runId)}/approvals`, {
      tool_call_id: toolCallId,
      decision,
      ...(reason ? { reason } : {}),
    }),
};

/** Reads a run's event stream (stored events, then live ones) until the run finishes or `signal` aborts. */
export const followEvents = (runId, onEvent, signal) =>
  followStream(`/v1/runs/${encodeURIComponent(runId)}/events`, onEvent, signal);

/** Reads a workflow's event stream until the workflow finishes or `signal` aborts. */
export const followWorkflowEvents = (workflowId, onEvent, signal) =>
  followStream(`/v1/workflows/${encodeURIComponent(workflowId)}/events`, onEvent, signal);

/**
 * Calls `onEvent` for each event of an SSE stream until it ends or `signal` aborts. fetch rather than
 * EventSource: no reconnect loop after the stream ends.
 */
async function followStream(path, onEvent, signal) {
  const res = await fetch(path, {
    credentials: 'same-origin',
    signal,
  });
  if (!res.ok || !res.body) throw new HttpError(res.status, 'HTTP', `event stream: ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = '';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) onEvent({ id, ...JSON.parse(data.join('\n')) });
    }
  }
}
