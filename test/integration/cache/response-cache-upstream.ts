/**
 * A stand-in upstream for the response cache's tests: every read counted by its target, and
 * paths whose answers carry what RFC 9111 makes a shared cache honour (no-store, private,
 * Set-Cookie, Vary, ETag, sizes), a slow path for coalescing, and writes that answer 200, 400
 * or 500 as the test asks.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface CacheUpstream {
  /** Reads (GET) received, by target (path and query). */
  readonly reads: Map<string, number>;
  /** The data's version: bumped by every accepted write, or by the test itself (a write by another road). */
  version: number;
  /** A read of `target` received so far. */
  readsOf(target: string): number;
  /** The If-None-Match of the last read of each path. */
  readonly conditional: Map<string, string | undefined>;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

export function cacheUpstream(): CacheUpstream {
  const reads = new Map<string, number>();
  const conditional = new Map<string, string | undefined>();
  const state: CacheUpstream = {
    reads,
    conditional,
    version: 1,
    readsOf: (target) => reads.get(target) ?? 0,
    handle(req, res) {
      const url = new URL(req.url!, 'http://upstream');
      const path = url.pathname;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        req.resume();
        req.on('end', () => {
          if (path.endsWith('/refuse')) return void res.writeHead(400, { 'content-type': 'application/json' }).end('{"message":"refused"}');
          state.version++;
          if (path.endsWith('/fail')) return void res.writeHead(500).end('{"message":"failed after writing"}');
          const location = path.endsWith('/moved') ? { location: '/other/place/doc1' } : {};
          res.writeHead(200, { 'content-type': 'application/json', ...location }).end('{}');
        });
        return;
      }
      if (req.method === 'GET') reads.set(req.url!, (reads.get(req.url!) ?? 0) + 1);
      conditional.set(path, req.headers['if-none-match']);
      const json = (status: number, headers: Record<string, string | string[]>, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
        res.end(req.method === 'HEAD' ? undefined : text);
      };
      const body = { url: req.url, version: state.version };
      switch (path) {
        case '/db/nostore':
          return json(200, { 'cache-control': 'no-store' }, body);
        case '/db/private':
          return json(200, { 'cache-control': 'private, max-age=60' }, body);
        case '/db/cookie':
          return json(200, { 'set-cookie': 'session=1; HttpOnly' }, body);
        case '/db/varystar':
          return json(200, { vary: '*' }, body);
        case '/db/vary':
          return json(200, { vary: 'X-Flavor' }, { ...body, flavor: req.headers['x-flavor'] ?? null });
        case '/db/big':
          return json(200, {}, { ...body, padding: 'x'.repeat(2000) });
        case '/db/missing':
          return json(404, {}, { message: 'no such collection' });
        case '/db/coll/gone':
          return json(404, {}, { message: 'no such document' });
        case '/db/etag': {
          const etag = `"v${state.version}"`;
          if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag, 'cache-control': 'no-cache', 'x-refreshed': String(Date.now()) }).end();
          return json(200, { etag, 'cache-control': 'no-cache' }, body);
        }
        case '/db/tagged':
          return json(200, { etag: 'W/"t1"' }, body);
        case '/db/slow':
          return void setTimeout(() => json(200, {}, body), 300);
        default:
          return json(200, {}, body);
      }
    },
  };
  return state;
}
