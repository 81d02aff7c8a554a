/**
 * Requests carrying `Upgrade:` (issue 53, item 9d). Only WebSocket upgrades are taken as upgrades
 * (GraphQL subscriptions, graphql/subscribe/ws.ts); any other (`curl --http2`'s `h2c`, made-up
 * protocols) is served as the plain HTTP/1.1 request it also is (RFC 9110 §7.8: a server may
 * ignore Upgrade), and a WebSocket upgrade nobody takes gets a 404 naming where WebSockets are
 * served. Before, node:http handed every such request to the 'upgrade' listener, which dropped the
 * connection with no answer and no log line.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { errorBody } from '../respond.js';

/** True when the request asks for a WebSocket (`Upgrade: websocket`, any case, possibly among others). */
export function wantsWebSocket(req: IncomingMessage): boolean {
  const upgrade = req.headers.upgrade;
  return typeof upgrade === 'string' && upgrade.split(',').some((p) => p.trim().toLowerCase() === 'websocket');
}

/**
 * Routes upgrades on `server`: a WebSocket upgrade goes to `take` (false when no door takes its
 * path: 404), any other upgrade is served as a plain request.
 *
 * Every upgrade request reaches 'upgrade' with its parser already detached, on every Node: for a
 * non-WebSocket one the request head is written back into the socket without the upgrade and the
 * socket handed to the server again as a new connection (`replayAsPlainRequest`), which parses
 * it, body included, as any other. Node ≥ 22.21 / 24.9 also offer `server.shouldUpgradeCallback`
 * to keep such a request on the request path, but on Node 24.22 a request it declines loses what
 * was pipelined behind it (an h2c `GET` followed by a `POST` on one connection: the `POST` never
 * answered), so it is not used: one road on both runtimes.
 */
export function routeUpgrades(server: Server, take: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean, logger: Logger, prefix: string): void {
  // One line every 10 s at most, with how many were not logged (a flood must not become one line each).
  let loggedAt = 0;
  let since = 0;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!wantsWebSocket(req)) return replayAsPlainRequest(server, req, socket, head);
    if (take(req, socket, head)) return;
    const path = (req.url ?? '/').split('?')[0]!.slice(0, 200);
    if (Date.now() - loggedAt >= 10_000) {
      logger.info(
        { event: 'websocket-refused', reason: 'no-websocket-here', path, peer: req.socket.remoteAddress, alsoRefusedSinceLastLine: since },
        'a WebSocket upgrade for a path that takes none was answered 404',
      );
      loggedAt = Date.now();
      since = 0;
    } else since++;
    answerUpgrade(socket, 404, errorBody(404, `no WebSocket is served at ${path}: WebSockets are taken at ${prefix}/<app> (GraphQL subscriptions) only`));
  });
}

/** Connection tokens and headers that belong to the upgrade, dropped when the request is served plainly. */
const UPGRADE_HEADERS = new Set(['upgrade', 'http2-settings']);

function replayAsPlainRequest(server: Server, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const replay = (): void => {
    if (socket.destroyed) return;
    const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`];
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      if (UPGRADE_HEADERS.has(lower)) continue;
      if (lower === 'connection') {
        const kept = raw[i + 1]!.split(',')
          .map((t) => t.trim())
          .filter((t) => t !== '' && !UPGRADE_HEADERS.has(t.toLowerCase()));
        if (kept.length > 0) lines.push(`${name}: ${kept.join(', ')}`);
        continue;
      }
      lines.push(`${name}: ${raw[i + 1]!}`);
    }
    if (head.length > 0) socket.unshift(head);
    // rawHeaders are decoded as latin1, so encoding them back gives the bytes that arrived.
    socket.unshift(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'));
    server.emit('connection', socket);
  };
  // A pipelined upgrade behind answers still being written: node:http queues later answers on the
  // connection's own state, which the new connection does not share, so wait for each of them.
  const whenIdle = (): void => {
    // node:http detaches an answer from its socket on 'finish' (writableFinished can be true before).
    const previous = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!previous) return replay();
    let once = false;
    const next = (): void => {
      if (once) return;
      once = true;
      setImmediate(whenIdle);
    };
    previous.once('finish', next);
    previous.once('close', next);
  };
  whenIdle();
}

/** An HTTP answer written on a socket that has not become a WebSocket (the handshake was refused). */
export function answerUpgrade(socket: Duplex, status: number, body: string, headers: Record<string, string> = {}): void {
  if (!socket.writable) return void socket.destroy();
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\ncache-control: no-store\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // A client that does not read its answer must not keep the socket.
  setTimeout(() => socket.destroy(), 1000).unref();
}
