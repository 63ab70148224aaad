import { AgentReachApiError } from '@agent-reach/client';
import type { EvalReport } from '@agent-reach/protocol';

/** Stores a report on the platform (`POST /v1/evals`); its id. */
export async function uploadReport(
  baseUrl: string,
  apiKey: string,
  report: EvalReport,
  fetch: typeof globalThis.fetch = globalThis.fetch,
): Promise<{ id: string }> {
  let res: Response;
  try {
    res = await fetch(`${baseUrl.replace(/\/+$/, '')}/v1/evals`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify(report),
    });
  } catch (err) {
    throw new AgentReachApiError({
      status: 0,
      code: 'NETWORK',
      message: `cannot reach ${baseUrl}`,
      cause: err,
    });
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) throw AgentReachApiError.fromResponse(res.status, body);
  return body as { id: string };
}
