import { AgentReachApiError } from './errors.js';
import { parseSse } from './sse.js';
import { isFinalStatus, isFinalWorkflowStatus } from '@agent-reach/protocol';
import {
  type Agent,
  type OutputOf,
  type Decision,
  type Run,
  type RunList,
  type RunStatus,
  type StreamedAnswerDelta,
  type StreamedEvent,
  type StreamedWorkflowEvent,
  type Workflow,
  type WorkflowList,
  type WorkflowStatus,
} from './types.js';

export interface ClientOptions {
  /** The API's base URL, e.g. `http://scheduler:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

export interface CreateRunInput<S = unknown> {
  agent: string;
  input: string;
  /**
   * JSON Schema the final answer must match, instead of the agent's `output_schema` (a TypeBox schema
   * types the run's `output`). The run's `output` is the parsed answer; an answer that keeps missing it
   * ends the run `failed` with reason `invalid_output`.
   */
  outputSchema?: S;
  /** An existing session whose history the run continues. */
  sessionId?: string;
  metadata?: Record<string, string>;
  model?: string;
  /**
   * Tools that require a grant the run may call (each one the agent lists); in a session, they hold for
   * the rest of it.
   */
  grants?: string[];
  /** The same key (per API key, 24 h) returns the same run instead of starting another. */
  idempotencyKey?: string;
}

export interface ListRunsFilter {
  agent?: string;
  status?: RunStatus;
  /** Epoch ms bounds on creation time. */
  since?: number;
  until?: number;
  limit?: number;
  /** Skip this many matches (prefer `cursor`). */
  offset?: number;
  /** Runs started with this metadata, e.g. `{ user_id: '42' }` (one pair). */
  metadata?: Record<string, string>;
  traceId?: string;
  /** Runs that called this tool. */
  tool?: string;
  /** Runs with a tool call that ended with this error kind (`timeout`, `forbidden`, …). */
  errorKind?: string;
  /** `next_cursor` of the previous page. */
  cursor?: string;
}

export interface CreateWorkflowInput {
  /** A workflow of the workflows file. */
  workflow: string;
  /** The request: `{{request}}` in its nodes' input templates. */
  input: string;
  metadata?: Record<string, string>;
  /** The same key (per API key, 24 h) returns the same workflow instead of starting another. */
  idempotencyKey?: string;
}

export interface ListWorkflowsFilter {
  workflow?: string;
  status?: WorkflowStatus;
  limit?: number;
  offset?: number;
}

export interface StreamOptions {
  /** Resume after this event id (the `id` of the last event seen). */
  lastEventId?: string;
  signal?: AbortSignal;
  /**
   * Also yield `answer_delta` events: the text of a run's streamed model turns as it is produced (live
   * only, never replayed). Default false. Only for `streamEvents`.
   */
  answerDeltas?: boolean;
}

export interface WaitOptions {
  /** Give up after this long, in ms (a TIMEOUT error). Default 10 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Pause before reconnecting a stream that ended early, in ms. Default 500. */
  reconnectDelayMs?: number;
}

export interface DecisionOptions {
  reason?: string;
  /** Who decided; default: the API key's name. */
  by?: string;
}

export interface AgentReachClient {
  createRun<S = unknown>(input: CreateRunInput<S>): Promise<Run<OutputOf<S>>>;
  /** Starts a run and waits for it to end (see `createRun` and `waitForRun`). */
  run<S = unknown>(input: CreateRunInput<S>, options?: WaitOptions): Promise<Run<OutputOf<S>>>;
  getRun<O = unknown>(runId: string): Promise<Run<O>>;
  listRuns(filter?: ListRunsFilter): Promise<RunList>;
  /** Follows the run's events until it ends (reconnecting as needed), then returns the final run. */
  waitForRun<O = unknown>(runId: string, options?: WaitOptions): Promise<Run<O>>;
  /** The run's events, stored then live, ending after `run_finished`. */
  /** The run's events, stored then live. */
  streamEvents(
    runId: string,
    options?: StreamOptions & { answerDeltas?: false },
  ): AsyncGenerator<StreamedEvent>;
  /** The run's events, stored then live, and the answer text of its model turns as it streams. */
  streamEvents(
    runId: string,
    options: StreamOptions & { answerDeltas: true },
  ): AsyncGenerator<StreamedEvent | StreamedAnswerDelta>;
  approve(runId: string, toolCallId: string, options?: DecisionOptions): Promise<Decision>;
  reject(runId: string, toolCallId: string, options?: DecisionOptions): Promise<Decision>;
  cancel(runId: string): Promise<Run>;
  createSession(sessionId?: string): Promise<{ session_id: string }>;
  /** Starts a run of `agent` in the session (continuing its history). */
  sendMessage(sessionId: string, input: Omit<CreateRunInput, 'sessionId'>): Promise<Run>;
  listAgents(): Promise<Agent[]>;
  createWorkflow(input: CreateWorkflowInput): Promise<Workflow>;
  /** The workflow with each node's state, output and run. */
  getWorkflow(workflowId: string): Promise<Workflow>;
  listWorkflows(filter?: ListWorkflowsFilter): Promise<WorkflowList>;
  /** The workflow's events, stored then live, ending after `workflow_finished`. */
  streamWorkflowEvents(workflowId: string, options?: StreamOptions): AsyncGenerator<StreamedWorkflowEvent>;
  /** Follows the workflow's events until it ends (reconnecting as needed), then returns it. */
  waitForWorkflow(workflowId: string, options?: WaitOptions): Promise<Workflow>;
  /** Cancels the workflow and its running node runs. */
  cancelWorkflow(workflowId: string): Promise<Workflow>;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** A typed client of the Agent-Reach HTTP API. Error answers reject with {@link AgentReachApiError}. */
export function createClient(options: ClientOptions): AgentReachClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const auth = { authorization: `Bearer ${options.apiKey}` };

  const send = async (
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> => {
    try {
      return await doFetch(`${base}${path}`, {
        method,
        headers: {
          ...auth,
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
        ...(init.signal ? { signal: init.signal } : {}),
      });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw new AgentReachApiError({
        status: 0,
        code: 'NETWORK',
        message: `cannot reach ${base}`,
        cause: err,
      });
    }
  };

  const call = async <T>(method: string, path: string, init: Parameters<typeof send>[2] = {}): Promise<T> => {
    const res = await send(method, path, {
      ...init,
      headers: { accept: 'application/json', ...init.headers },
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    if (!res.ok) throw AgentReachApiError.fromResponse(res.status, body);
    return body as T;
  };

  const run = (id: string) => `/v1/runs/${encodeURIComponent(id)}`;
  /** A list filter as a query string (`?a=1&b=2`, or nothing). */
  const query = (f: object) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(f)) if (v !== undefined) q.set(k, String(v));
    const qs = q.toString();
    return qs ? `?${qs}` : '';
  };
  const runBody = (i: Omit<CreateRunInput, 'sessionId' | 'idempotencyKey'>) => ({
    agent: i.agent,
    input: i.input,
    ...(i.metadata ? { metadata: i.metadata } : {}),
    ...(i.model ? { model: i.model } : {}),
    // JSON text of the schema: a TypeBox schema's symbol keys are not part of it.
    ...(i.outputSchema === undefined
      ? {}
      : { output_schema: JSON.parse(JSON.stringify(i.outputSchema)) as unknown }),
    ...(i.grants ? { grants: i.grants } : {}),
  });
  const idem = (key: string | undefined) => (key ? { 'idempotency-key': key } : undefined);
  const decide = (
    runId: string,
    toolCallId: string,
    decision: 'approve' | 'reject',
    o: DecisionOptions = {},
  ) =>
    call<Decision>('POST', `${run(runId)}/approvals`, {
      body: {
        tool_call_id: toolCallId,
        decision,
        ...(o.reason ? { reason: o.reason } : {}),
        ...(o.by ? { by: o.by } : {}),
      },
    });

  /** An SSE route's messages with ids (heartbeat comments skipped). */
  async function* sse<E>(path: string, o: StreamOptions = {}): AsyncGenerator<E> {
    const res = await send('GET', path, {
      headers: { accept: 'text/event-stream', ...(o.lastEventId ? { 'last-event-id': o.lastEventId } : {}) },
      ...(o.signal ? { signal: o.signal } : {}),
    });
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => '');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      throw AgentReachApiError.fromResponse(res.status, body);
    }
    for await (const m of parseSse(res.body)) {
      if (m.event === 'answer_delta') {
        if (o.answerDeltas) yield { id: m.id ?? '', type: m.event, data: JSON.parse(m.data) as unknown } as E;
        continue;
      }
      if (m.id === undefined) continue;
      yield { id: m.id, type: m.event, data: JSON.parse(m.data) as unknown } as E;
    }
  }

  const streamEvents = (runId: string, o?: StreamOptions) =>
    sse<StreamedEvent | StreamedAnswerDelta>(`${run(runId)}/events`, o);
  const workflow = (id: string) => `/v1/workflows/${encodeURIComponent(id)}`;
  const streamWorkflowEvents = (id: string, o?: StreamOptions) =>
    sse<StreamedWorkflowEvent>(`${workflow(id)}/events`, o);

  /**
   * Reads the subject until it is final, following its events in between (resuming a dropped stream
   * after the last event seen), up to the timeout.
   */
  const follow = async <T extends { status: string }>(
    what: string,
    get: (signal: AbortSignal) => Promise<T>,
    isFinal: (t: T) => boolean,
    stream: (o: StreamOptions) => AsyncGenerator<{ id: string; type: string }>,
    lastType: string,
    o: WaitOptions,
  ): Promise<T> => {
    const controller = new AbortController();
    const timeoutMs = o.timeoutMs ?? 10 * 60_000;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    let last: string | undefined;
    try {
      for (;;) {
        const current = await get(controller.signal);
        if (isFinal(current)) return current;
        let finished = false;
        try {
          for await (const e of stream({
            signal: controller.signal,
            ...(last ? { lastEventId: last } : {}),
          })) {
            last = e.id;
            if (e.type === lastType) {
              finished = true;
              break;
            }
          }
        } catch (err) {
          // A dropped stream is resumed; an API error answer is the caller's.
          if (controller.signal.aborted || (err instanceof AgentReachApiError && err.status !== 0)) throw err;
        }
        if (!finished) await sleep(o.reconnectDelayMs ?? 500, controller.signal);
      }
    } catch (err) {
      if (timedOut)
        throw new AgentReachApiError({
          status: 0,
          code: 'TIMEOUT',
          message: `${what} did not end within ${timeoutMs} ms`,
        });
      throw err;
    } finally {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
    }
  };

  const createRun = <S>(i: CreateRunInput<S>) =>
    call<Run<OutputOf<S>>>('POST', '/v1/runs', {
      body: { ...runBody(i), ...(i.sessionId ? { session_id: i.sessionId } : {}) },
      ...(i.idempotencyKey ? { headers: idem(i.idempotencyKey) } : {}),
    });
  const waitForRun = <O>(runId: string, o: WaitOptions = {}) =>
    follow(
      `run ${runId}`,
      (signal) => call<Run<O>>('GET', run(runId), { signal }),
      (r) => isFinalStatus(r.status),
      (so) => streamEvents(runId, so),
      'run_finished',
      o,
    );

  const client: AgentReachClient = {
    createRun,
    run: async (i, o) => waitForRun((await createRun(i)).run_id, o),
    getRun: <O>(id: string) => call<Run<O>>('GET', run(id)),
    listRuns: (f = {}) => {
      const { metadata, traceId, errorKind, ...rest } = f;
      const [pair, ...more] = Object.entries(metadata ?? {});
      if (more.length > 0) throw new TypeError('listRuns: filter by one metadata pair');
      return call<RunList>(
        'GET',
        `/v1/runs${query({
          ...rest,
          trace_id: traceId,
          error_kind: errorKind,
          metadata: pair ? `${pair[0]}=${pair[1]}` : undefined,
        })}`,
      );
    },
    waitForRun,
    streamEvents: streamEvents as AgentReachClient['streamEvents'],
    approve: (runId, toolCallId, o) => decide(runId, toolCallId, 'approve', o),
    reject: (runId, toolCallId, o) => decide(runId, toolCallId, 'reject', o),
    cancel: (runId) => call<Run>('POST', `${run(runId)}/cancel`),
    createSession: (sessionId) =>
      call<{ session_id: string }>('POST', '/v1/sessions', {
        body: sessionId ? { session_id: sessionId } : {},
      }),
    sendMessage: (sessionId, i) =>
      call<Run>('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/messages`, {
        body: runBody(i),
        ...(i.idempotencyKey ? { headers: idem(i.idempotencyKey) } : {}),
      }),
    listAgents: async () => (await call<{ agents: Agent[] }>('GET', '/v1/agents')).agents,
    createWorkflow: (i) =>
      call<Workflow>('POST', '/v1/workflows', {
        body: { workflow: i.workflow, input: i.input, ...(i.metadata ? { metadata: i.metadata } : {}) },
        ...(i.idempotencyKey ? { headers: idem(i.idempotencyKey) } : {}),
      }),
    getWorkflow: (id) => call<Workflow>('GET', workflow(id)),
    listWorkflows: (f = {}) => call<WorkflowList>('GET', `/v1/workflows${query(f)}`),
    streamWorkflowEvents,
    waitForWorkflow: (id, o = {}) =>
      follow(
        `workflow ${id}`,
        (signal) => call<Workflow>('GET', workflow(id), { signal }),
        (w) => isFinalWorkflowStatus(w.status),
        (so) => streamWorkflowEvents(id, so),
        'workflow_finished',
        o,
      ),
    cancelWorkflow: (id) => call<Workflow>('POST', `${workflow(id)}/cancel`),
  };
  return client;
}
