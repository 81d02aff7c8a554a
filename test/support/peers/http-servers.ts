import { createHash } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestServer {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

/** A real HTTP server on a free loopback port with the given handler. */
export async function startHttpServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const server = createServer({ keepAliveTimeout: 65_000 }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A request sent byte for byte as given (undici and fetch normalise paths and Connection). */
export function rawRequest(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: Number(url.port), path, method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Answers `{ bytes, sha256 }` of the request body it read whole (an upstream that checks what arrived, byte for byte). */
export function answerBodyDigest(req: IncomingMessage, res: ServerResponse): void {
  const hash = createHash('sha256');
  let bytes = 0;
  req.on('data', (c: Buffer) => {
    bytes += c.length;
    hash.update(c);
  });
  req.on('end', () => res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') })));
}
