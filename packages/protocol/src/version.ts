/**
 * Version of every versioned wire shape (tool-call job, reply, run job, stored run state). A reader
 * refuses any other value with an error naming it. Data written before the field existed carries none and
 * is read as version 1: its shape is the same.
 */
export const WIRE_VERSION = 1;

/** Thrown when a job, reply or record names a version this release does not read. */
export class UnsupportedVersionError extends Error {
  readonly version: unknown;
  constructor(what: string, version: unknown) {
    // The version comes from data anyone may have written: it is echoed short.
    const named = String(JSON.stringify(version)).slice(0, 40);
    super(`${what} has wire version ${named}; this release reads version ${WIRE_VERSION} only`);
    this.name = 'UnsupportedVersionError';
    this.version = version;
  }
}

/** Checks the `v` of a job, reply or record (absent: version 1); throws {@link UnsupportedVersionError}. */
export function checkVersion(what: string, data: { v?: unknown }): void {
  if (data.v !== undefined && data.v !== WIRE_VERSION) throw new UnsupportedVersionError(what, data.v);
}
