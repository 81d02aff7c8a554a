/**
 * An HTTP relay in front of a backend that can hold the GETs whose path matches until the test
 * opens the gate, and passes everything else as it is: a backend read made to last exactly as
 * long as a test needs (identical concurrent queries join one execution while it is held).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { startHttpServer, type TestServer } from './http-servers.js';

export interface GatedReads extends TestServer {
  /** Holds the GETs whose path (without the query) `matches` from now on, until `open`. */
  shut(matches: (path: string) => boolean): void;
  /** Lets every held read go on, and the later ones pass. */
  open(): void;
  /** Reads held now. */
  readonly held: number;
}

export async function startGatedReads(target: string): Promise<GatedReads> {
  let matches: ((path: string) => boolean) | null = null;
  let waiting: Array<() => void> = [];
  const server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (req.method === 'GET' && matches?.(new URL(req.url ?? '/', 'http://relay').pathname)) await new Promise<void>((resolve) => waiting.push(resolve));
      const headers = { ...req.headers };
      for (const h of ['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']) delete headers[h];
      const up = await request(`${target}${req.url}`, { method: req.method as 'GET', headers, body: chunks.length > 0 ? Buffer.concat(chunks) : null });
      const body = Buffer.from(await up.body.arrayBuffer());
      const out = { ...up.headers };
      for (const h of ['connection', 'transfer-encoding', 'keep-alive']) delete out[h];
      out['content-length'] = String(body.length);
      res.writeHead(up.statusCode, out);
      res.end(body);
    })().catch(() => res.destroy());
  });
  const relay = Object.assign(server, {
    shut(next: (path: string) => boolean) {
      matches = next;
    },
    open() {
      matches = null;
      const go = waiting;
      waiting = [];
      for (const resolve of go) resolve();
    },
  });
  // A getter (Object.assign would copy the count once).
  return Object.defineProperty(relay, 'held', { get: () => waiting.length }) as GatedReads;
}
