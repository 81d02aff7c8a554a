import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { extname, join } from 'node:path';

/** The strict policy every page Outrigger serves carries: own origin only, no inline script, never framed. */
export const STRICT_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/**
 * A directory of built assets (dist/assets/<name>), read once at start into memory: they are
 * small, and serving from memory keeps a slow disk off the request path. Files are served with
 * the strict CSP and nosniff; the caller decides who may see them.
 */
export class StaticAssets {
  private readonly files = new Map<string, Asset>();

  /** `transform` may rewrite a file once as it is read (the console's page learns a configured route this way). */
  constructor(directory: string, transform: (name: string, body: Buffer) => Buffer = (_name, body) => body) {
    let entries: string[] = [];
    try {
      entries = readdirSync(directory, { recursive: true }) as string[];
    } catch {
      // Not built (tsc without the asset step): every lookup misses, and the route says so.
    }
    for (const entry of entries) {
      const full = join(directory, entry);
      if (!statSync(full).isFile()) continue;
      const name = entry.split('\\').join('/');
      const body = transform(name, readFileSync(full));
      this.files.set(name, {
        body,
        type: TYPES[extname(name)] ?? 'application/octet-stream',
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      });
    }
  }

  get size(): number {
    return this.files.size;
  }

  has(name: string): boolean {
    return this.files.has(name);
  }

  /** Writes the asset, or returns false when there is none of that name (the caller answers 404). */
  send(res: ServerResponse, name: string, ifNoneMatch: string | undefined, extraHeaders: Record<string, string> = {}): boolean {
    const asset = this.files.get(name);
    if (!asset) return false;
    const headers = {
      'content-type': asset.type,
      etag: asset.etag,
      'cache-control': 'no-cache',
      'content-security-policy': STRICT_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      ...extraHeaders,
    };
    if (ifNoneMatch === asset.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    res.writeHead(200, { ...headers, 'content-length': asset.body.length });
    res.end(asset.body);
    return true;
  }
}
