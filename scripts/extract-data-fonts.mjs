// GraphiQL's prebuilt CSS embeds its fonts as data: URLs, which the strict CSP (font-src 'self')
// refuses. This moves each into a file next to the CSS and points the CSS at it, relative to the
// stylesheet's own URL (`?graphiql-asset=font-N.woff2` for GraphiQL).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export async function extractDataFonts(outdir, cssName, urlFor) {
  const path = join(outdir, cssName);
  const css = await readFile(path, 'utf8');
  let n = 0;
  const pending = [];
  const out = css.replace(/url\((['"]?)data:font\/(woff2?);base64,([A-Za-z0-9+/=]+)\1\)/g, (_m, _q, type, b64) => {
    const name = `font-${n++}.${type}`;
    pending.push(writeFile(join(outdir, name), Buffer.from(b64, 'base64')));
    return `url("${urlFor(name)}")`;
  });
  await Promise.all(pending);
  await writeFile(path, out);
  return n;
}
