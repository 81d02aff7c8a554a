// Bundles the browser assets shipped inside the package (no CDN, works offline) into dist/assets/<name>/.
// Each bundle is one entry below; `npm run build` runs this after tsc. esbuild needs no install script.
import { build } from 'esbuild';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { extractDataFonts } from './extract-data-fonts.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** name -> { entryPoints, copy? }: each becomes dist/assets/<name>/ (served by src/http/static-assets.ts). */
export const bundles = {
  console: { entryPoints: ['src/admin/ui/main.ts'], copy: ['src/admin/ui/index.html'] },
  // GraphiQL 3 (CodeMirror 5: no web workers, nothing evaluated at run time), React 18, its CSS.
  graphiql: {
    entryPoints: ['src/graphql/ui/graphiql-page.mjs'],
    options: { define: { 'process.env.NODE_ENV': '"production"' } },
    // Its fonts come as data: URLs, which font-src 'self' refuses: served as files instead.
    after: (outdir) => extractDataFonts(outdir, 'graphiql-page.css', (name) => `?graphiql-asset=${name}`),
  },
};

for (const [name, bundle] of Object.entries(bundles)) {
  const outdir = resolve(root, 'dist/assets', name);
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: bundle.entryPoints.map((entry) => resolve(root, entry)),
    outdir,
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    sourcemap: false,
    legalComments: 'external',
    logLevel: 'warning',
    loader: { '.svg': 'dataurl', '.woff2': 'file' },
    ...bundle.options,
  });
  // Static files (an HTML shell) are copied as they are.
  for (const file of bundle.copy ?? []) await copyFile(resolve(root, file), resolve(outdir, basename(file)));
  await bundle.after?.(outdir);
  console.log(`assets: dist/assets/${name}`);
}
