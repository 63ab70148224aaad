import { constants } from '@agent-reach/shared';

/**
 * What makes a document invalid OpenAPI (3.0 or 3.1, by the specification's JSON Schema and its rules on
 * path parameters and operation ids), checked with `@readme/openapi-parser`: one line per error, at most
 * OPENAPI_MAX_VALIDATION_PROBLEMS (then how many more). Empty when the document is valid. `doc` is the
 * document as read, its `$ref`s resolved (the validator reads nothing itself: it refuses URLs of internal
 * hosts, where the fleet's own APIs usually are); it is not changed.
 */
export async function openApiValidationProblems(doc: Readonly<Record<string, unknown>>): Promise<string[]> {
  // Loaded on first use: an executor without OpenAPI sources does not pay for the validator at start.
  const { validate } = await import('@readme/openapi-parser');
  const result = await validate(structuredClone(doc) as never, {
    resolve: { external: false },
    timeoutMs: constants.OPENAPI_DOCUMENT_TIMEOUT_MS,
    validate: { errors: { colorize: false } },
  });
  if (result.valid) return [];
  const max = constants.OPENAPI_MAX_VALIDATION_PROBLEMS;
  const lines = result.errors.slice(0, max).map((e) => oneLine(e.message));
  const more = result.errors.length - lines.length + (result.additionalErrors ?? 0);
  if (more > 0) lines.push(`and ${more} more`);
  return lines;
}

/**
 * One validation error on one line: what is wrong, where (the line of the document the error points at,
 * and the two after it), and the validator's hint. The validator prints a code frame of the document as
 * JSON, whose line numbers are not those of the file: only its text is kept.
 */
function oneLine(message: string): string {
  const lines = message.split('\n');
  // "REQUIRED must have required property 'version'": the keyword in capitals adds nothing.
  const what = [lines[0] ?? '', ...lines.slice(1).filter((l) => /^\(.*\)$/.test(l.trim()))]
    .join(' ')
    .replace(/^[A-Z_]+\s+/, '')
    .trim();
  const at = lines.findIndex((l) => /^>\s*\d+\s*\|/.test(l));
  if (at < 0) return what;
  const source = (l: string | undefined) => (l ?? '').replace(/^[>\s]*\d+\s*\|/, '').trim();
  // "version is missing here!" says what "must have required property" does not: where. "Unexpected
  // value, …" repeats the error.
  const hint = /\^+\s*(.*)$/
    .exec(lines[at + 1] ?? '')?.[1]
    ?.trim()
    .replace(/!$/, '');
  const said = hint && !hint.startsWith('Unexpected value') ? ` (${hint})` : '';
  const near = [lines[at], ...lines.slice(at + 2, at + 4)]
    .map(source)
    .filter(Boolean)
    .join(' ')
    .replace(/,$/, '');
  return `${what} at ${near}${said}`;
}
