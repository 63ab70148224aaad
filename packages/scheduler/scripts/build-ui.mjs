// Bundles the run inspector (ui/) with esbuild into ui-dist/: app.js and app.css, no CDN, served by the API.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Writes app.js and app.css into `outdir` (default: the package's ui-dist/; a relative path is taken from
 * the package's folder).
 */
export async function buildUi({ outdir = 'ui-dist' } = {}) {
  await build({
    absWorkingDir: root,
    entryPoints: { app: 'ui/main.js' },
    outdir,
    bundle: true,
    format: 'esm',
    minify: true,
    sourcemap: false,
    target: ['es2022'],
    legalComments: 'none',
    logLevel: 'warning',
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildUi();
