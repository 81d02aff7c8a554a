import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { methodNotAllowed, notFound } from '../errors.js';
import { StaticAssets } from '../http/static-assets.js';
import type { SubRouteHandler } from './admin-route.js';

/** dist/assets/console, seen from dist/src/admin (the package) or from src/admin (tests run from source). */
function consoleDirectory(): string {
  const candidates = ['../../assets/console/', '../../dist/assets/console/'].map((p) => fileURLToPath(new URL(p, import.meta.url)));
  return candidates.find((dir) => existsSync(dir)) ?? candidates[0]!;
}

/**
 * The page names where the owners' keys live (`routes.keys`), which the console's "Your API
 * keys" page calls: the shell carries the default in a meta tag, replaced here by the configured
 * one (a route path is `/` and URL characters; escaped all the same).
 */
function withKeysRoute(page: Buffer, keysRoute: string): Buffer {
  const escaped = keysRoute.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);
  return Buffer.from(page.toString('utf8').replace('name="outrigger-keys-route" content="/keys"', `name="outrigger-keys-route" content="${escaped}"`));
}

/**
 * The admin console (SPEC §8): `GET <admin>/` serves its page (a static file), `<admin>/console/*`
 * its script and styles, all built by scripts/build-assets.mjs and served from memory with the
 * strict CSP. `<admin>` without the slash redirects, so the page's relative URLs resolve.
 */
export function createConsoleAreas(prefix: string, keysRoute = '/keys', directory = consoleDirectory()): Record<string, SubRouteHandler> {
  const assets = new StaticAssets(directory, (name, body) => (name === 'index.html' ? withKeysRoute(body, keysRoute) : body));
  const ensureRead = (method: string) => {
    if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed(['GET']);
  };
  const page: SubRouteHandler = (scope) => {
    ensureRead(scope.method);
    if (scope.path === prefix) {
      scope.res.writeHead(308, { location: `${prefix}/`, 'cache-control': 'no-store' });
      scope.res.end();
      return;
    }
    if (!assets.send(scope.res, 'index.html', scope.header('if-none-match'), { 'x-frame-options': 'DENY' }))
      throw notFound('the console is not built into this installation: run `npm run build` (it bundles the console into dist/assets/console)');
  };
  const files: SubRouteHandler = (scope, subPath) => {
    ensureRead(scope.method);
    const name = subPath.slice(1);
    if (name === 'index.html' || !assets.send(scope.res, name, scope.header('if-none-match'))) throw notFound(`no console file ${JSON.stringify(name)}`);
  };
  return { '': page, console: files };
}
