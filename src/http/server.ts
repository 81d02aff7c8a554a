import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LinkedSet } from '../util/linked-set.js';
import { answerClientError, type ServerTimeouts } from './client-error.js';

export interface ListeningServer {
  server: Server;
  url: string;
  /** The drain (SPEC §2): every answer from now on, and those in flight, carries `Connection: close`. */
  beginDrain(): void;
  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts what is left. */
  drain(graceMs: number): Promise<{ forced: number }>;
}

/** The port is taken (or not ours to take): says which setting to change instead of a bare EADDRINUSE. */
export class ListenError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string,
  ) {
    super(
      code === 'EADDRINUSE'
        ? `listen.port: ${host}:${port} is already in use; stop what listens there or choose another listen.port`
        : code === 'EACCES'
          ? `listen.port: not allowed to listen on ${host}:${port} (ports below 1024 need privileges); choose another listen.port`
          : code === 'EADDRNOTAVAIL'
            ? `listen.host: ${host} is not an address of this machine; use 0.0.0.0, 127.0.0.1 or one of its addresses`
            : `listen: cannot listen on ${host}:${port} (${code})`,
    );
    this.name = 'ListenError';
  }
}

/**
 * Handles one request and calls `finished` once its response has closed (the in-flight list that
 * shutdown drains). A callback rather than a second 'close' listener of the server's own: the
 * handler listens for 'close' anyway, and one listener per request costs less than two.
 */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse, finished: () => void) => void;

export async function listen(handler: RequestHandler, host: string, port: number, timeouts: ServerTimeouts): Promise<ListeningServer> {
  // Not a Set: its rehashed tables keep finished requests alive past young collections (util/linked-set.ts).
  const inFlight = new LinkedSet<ServerResponse>();
  let draining = false;
  // Both timers run from a request's first byte, so a slow client cannot stretch them by trickling.
  const server = createServer(
    {
      keepAliveTimeout: 65_000,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      // How often Node checks those two timers (its default, 30 s, would let a short timeout run long).
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(Math.min(timeouts.headersTimeoutMs, timeouts.requestTimeoutMs) / 4))),
    },
    (req, res) => {
      const node = inFlight.add(res);
      // Kept-alive clients must learn to go elsewhere: the connection ends with this answer.
      if (draining) res.setHeader('connection', 'close');
      handler(req, res, () => inFlight.remove(node));
    },
  );
  server.on('clientError', answerClientError(timeouts));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(new ListenError(host, port, error.code ?? error.message)));
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const beginDrain = () => {
    draining = true;
    for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
  };
  return {
    server,
    url: `http://${shownHost}:${address.port}`,
    beginDrain,
    async drain(graceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      beginDrain();
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
