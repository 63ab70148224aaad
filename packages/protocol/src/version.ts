/**
 * Version of every versioned wire shape (tool-call job, reply, run job, stored run state), written by this
 * release. Version 2 made job data snake_case like every other wire; version 1 jobs (camelCase) are still
 * read and renamed, and data written before the field existed carries none and is version 1. A reader
 * refuses any other value with an error naming it.
 */
export const WIRE_VERSION = 2;

/** Versions this release reads. */
export const READABLE_VERSIONS: readonly number[] = [1, 2];

/** Thrown when a job, reply or record names a version this release does not read. */
export class UnsupportedVersionError extends Error {
  readonly version: unknown;
  constructor(what: string, version: unknown) {
    // The version comes from data anyone may have written: it is echoed short.
    const named = String(JSON.stringify(version)).slice(0, 40);
    super(
      `${what} has wire version ${named}; this release reads versions ${READABLE_VERSIONS.join(' and ')}`,
    );
    this.name = 'UnsupportedVersionError';
    this.version = version;
  }
}

/** Checks the `v` of a job, reply or record (absent: version 1); throws {@link UnsupportedVersionError}. */
export function checkVersion(what: string, data: { v?: unknown }): void {
  if (data.v === undefined) return;
  if (typeof data.v !== 'number' || !READABLE_VERSIONS.includes(data.v))
    throw new UnsupportedVersionError(what, data.v);
}

/**
 * A version-1 record under this release's names: each old field renamed (unless the new name is there
 * too, so that a schema can name the stray one) and `v` set to {@link WIRE_VERSION}.
 */
export function renameVersion1Fields(
  data: Record<string, unknown>,
  renames: Readonly<Record<string, string>>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data, v: WIRE_VERSION };
  for (const [old, now] of Object.entries(renames)) {
    if (Object.hasOwn(data, old) && !Object.hasOwn(data, now)) {
      out[now] = data[old];
      delete out[old];
    }
  }
  return out;
}
