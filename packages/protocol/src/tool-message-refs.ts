import { toolMessageContent, type ToolResult } from './tool-call.js';

/*
 * A run's results hash holds each answered call's result as recorded (first wins, never changed). The
 * history's tool message of such a call is the result as the model reads it (`toolMessageContent`), so
 * a checkpoint stores that message as a reference to the entry instead of repeating it:
 *
 *   {"role":"tool","tool_call_id":"call_1","$result":1}
 *
 * and a reader of the record puts the content back from the entry. A message is stored so only when the
 * entry gives back exactly its content: the writer checks that the result it expects gives the message,
 * and the checkpoint script that the entry is that result (by SHA-1), else the message is stored whole.
 * The checkpoint that ends the run takes each referred entry into its message and drops it from the hash
 * (a list holds it more compactly than a hash of long values):
 *
 *   {"role":"tool","tool_call_id":"call_1","$entry":{…the entry as recorded…}}
 *
 * which reads back the same way. A record with neither form reads as before.
 */

/** A reference to the results-hash entry of `toolCallId`, as the history's list stores it. */
export function toolMessageRef(toolCallId: string): string {
  return `{"role":"tool","tool_call_id":${JSON.stringify(toolCallId)},"$result":1}`;
}

/**
 * A finished run's tool message with its results-hash entry taken in, up to the entry: the checkpoint
 * that ends a run turns each reference into this followed by the entry and `}`.
 */
export function toolMessageEntryPrefix(toolCallId: string): string {
  return `{"role":"tool","tool_call_id":${JSON.stringify(toolCallId)},"$entry":`;
}

/** The call id a stored message refers to in the results hash, or undefined when it is stored whole. */
export function toolMessageRefOf(stored: string): string | undefined {
  if (!stored.startsWith('{"role":"tool"') || !stored.endsWith(',"$result":1}')) return undefined;
  const parsed = JSON.parse(stored) as { tool_call_id?: unknown };
  return typeof parsed.tool_call_id === 'string' ? parsed.tool_call_id : undefined;
}

/** The tool message a results-hash entry gives, as the history holds it. */
export function toolMessageOf(toolCallId: string, entry: string): string {
  return JSON.stringify({
    role: 'tool',
    tool_call_id: toolCallId,
    content: toolMessageContent(JSON.parse(entry) as ToolResult),
  });
}

/** A stored message a reader cannot make whole: its results-hash entry is missing. */
export class ToolMessageRefError extends Error {
  readonly code = 'TOOL_MESSAGE_REF_UNRESOLVED';
  constructor(readonly toolCallId: string) {
    super(`stored run history: the result of call ${toolCallId} that its tool message refers to is missing`);
    this.name = 'ToolMessageRefError';
  }
}

/**
 * A run's stored history made whole: each reference replaced by the tool message its results-hash
 * entry gives. Returns the list itself when it holds no reference.
 */
export function resolveToolMessageRefs(
  stored: readonly string[],
  results: Readonly<Record<string, string>>,
): string[] {
  let out: string[] | undefined;
  stored.forEach((m, i) => {
    if (m.startsWith('{"role":"tool"') && m.includes(',"$entry":')) {
      // A finished run's message with its entry taken in.
      const { tool_call_id: id, $entry: entry } = JSON.parse(m) as {
        tool_call_id: string;
        $entry: ToolResult;
      };
      out ??= [...stored];
      out[i] = JSON.stringify({ role: 'tool', tool_call_id: id, content: toolMessageContent(entry) });
      return;
    }
    const id = toolMessageRefOf(m);
    if (id === undefined) return;
    const entry = Object.hasOwn(results, id) ? results[id] : undefined;
    if (entry === undefined) throw new ToolMessageRefError(id);
    out ??= [...stored];
    out[i] = toolMessageOf(id, entry);
  });
  return out ?? (stored as string[]);
}

/** Whether a stored history holds a reference (its results hash is needed to read it). */
export function hasToolMessageRefs(stored: readonly string[]): boolean {
  return stored.some((m) => toolMessageRefOf(m) !== undefined);
}
