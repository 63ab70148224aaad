import crypto from 'node:crypto';

/**
 * A run's ledger of the calls its model made (`keys.runCalls(runId)`): the scheduler records each call
 * there in the same script as the checkpoint of the model turn, before publishing it; an executor runs a
 * job only when the ledger holds the same call for the same agent. A job added to Redis by hand, or one
 * whose fields were changed, does not match and is refused.
 */
export interface CallLedgerEntry {
  /** The agent whose run made the call. */
  agent: string;
  /** The tool name as the model sent it. */
  name: string;
  /** sha256 (hex) of the model's raw argument string. */
  args_sha256: string;
}

/**
 * The ledger field that holds a call's start (`started:<publication>:<executor>`, written by the executor's
 * verify script right before it runs the call) or its withdrawal (`withdrawn:<publication>`, written by
 * its dispatcher when nobody started that publication by its deadline). Call ids never hold a `:`.
 */
export function callStartField(toolCallId: string): string {
  return `${toolCallId}:start`;
}

/**
 * sha256 (hex) of a call's raw argument string. One-shot `crypto.hash` (Node 20.12+) where there is one: it
 * is computed on every call's path, and a `Hash` object costs several times more for a short string.
 */
export const argumentsDigest: (args: string) => string =
  typeof crypto.hash === 'function'
    ? (args) => crypto.hash('sha256', args, 'hex')
    : (args) => crypto.createHash('sha256').update(args).digest('hex');

/** The ledger value of one call (a JSON string, as stored). */
export function callLedgerEntry(call: { agent: string; name: string; arguments: string }): string {
  const entry: CallLedgerEntry = {
    agent: call.agent,
    name: call.name,
    args_sha256: argumentsDigest(call.arguments),
  };
  return JSON.stringify(entry);
}

/** Whether a job's call is the one recorded in the ledger (`recorded` is the stored JSON, or null). */
export function matchesLedger(
  recorded: string | null | undefined,
  call: { agent: string; name: string; arguments: string },
): boolean {
  if (typeof recorded !== 'string') return false;
  let entry: Partial<CallLedgerEntry>;
  try {
    entry = JSON.parse(recorded) as Partial<CallLedgerEntry>;
  } catch {
    return false;
  }
  return (
    entry.agent === call.agent &&
    entry.name === call.name &&
    entry.args_sha256 === argumentsDigest(call.arguments)
  );
}
