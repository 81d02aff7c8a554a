import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ListeningServer {
  server: Server;
  url: string;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts what is left. */
  drain(graceMs: number): Promise<{ forced: number }>;
}

export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  host: string,
  port: number,
): Promise<ListeningServer> {
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000, requestTimeout: 0 }, handler);
  const inFlight = new Set<ServerResponse>();
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    async drain(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive clients must learn to go elsewhere: answer what is in flight with Connection: close.
      for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
      server.closeIdleConnections();
      let forced = 0;
      const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
      const outcome = await Promise.race([closed.then(() => 'closed' as const), timer]);
      if (outcome === 'timeout') {
        forced = inFlight.size;
        server.closeAllConnections();
        await closed;
      }
      return { forced };
    },
  };
}
