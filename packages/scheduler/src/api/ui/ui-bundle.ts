import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@agent-reach/shared';

/** The bundle `pnpm build` writes (esbuild): the same place relative to `src/api/ui` and `dist/api/ui`. */
export const BUNDLE_DIR = new URL('../../../ui-dist/', import.meta.url);
/** The script that writes it, present in a source checkout (not in the published package, which ships the bundle). */
export const BUILD_SCRIPT = new URL('../../../scripts/build-ui.mjs', import.meta.url);

/** The files of the bundle and their content types. */
export const UI_ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

/** Why the inspector cannot be served: its bundle is missing and building it failed. */
export class UiBundleMissing extends Error {
  constructor(
    readonly dir: string,
    cause: unknown,
  ) {
    super(
      `the inspector bundle is not in ${dir} and could not be built from the sources: ` +
        'run `pnpm build` (or `pnpm --filter @agent-reach/scheduler build:ui`)',
      { cause },
    );
  }
}

/** Builds the bundle into a folder: the build script's `buildUi` in a source checkout. */
export type UiBundleBuilder = (outdir: string) => Promise<void>;

/** Imports the build script next to the sources and runs it; rejects where there is none (a published package). */
export const buildFromSources: UiBundleBuilder = async (outdir) => {
  const script = (await import(BUILD_SCRIPT.href)) as {
    buildUi(o: { outdir: string }): Promise<void>;
  };
  await script.buildUi({ outdir });
};

/**
 * The inspector's bundle, read once and kept. When it is missing (a source checkout where `pnpm build`
 * has not run: the README's two commands), it is built from the sources on the first request, once for
 * every request waiting on it, and the build logged; where it cannot be built, each read rejects with
 * `UiBundleMissing`, which names the folder and the command.
 */
export function uiBundle(
  log: Logger,
  dir: URL = BUNDLE_DIR,
  build: UiBundleBuilder = buildFromSources,
): { read(asset: string): Promise<Buffer> } {
  const cache = new Map<string, Buffer>();
  let building: Promise<void> | undefined;
  const outdir = fileURLToPath(dir);
  const buildOnce = () => {
    building ??= (async () => {
      const started = Date.now();
      log.info({ dir: outdir }, 'inspector bundle missing: building it from the sources');
      try {
        await build(outdir);
      } catch (err) {
        building = undefined;
        log.error({ err, dir: outdir }, 'inspector bundle missing and could not be built');
        throw new UiBundleMissing(outdir, err);
      }
      log.info({ dir: outdir, ms: Date.now() - started }, 'inspector bundle built');
    })();
    return building;
  };
  const read = async (asset: string): Promise<Buffer> => {
    const known = cache.get(asset);
    if (known) return known;
    let body: Buffer;
    try {
      body = await readFile(new URL(asset, dir));
    } catch {
      await buildOnce();
      body = await readFile(new URL(asset, dir));
    }
    cache.set(asset, body);
    return body;
  };
  return { read };
}
