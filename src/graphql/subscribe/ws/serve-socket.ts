/**
 * One `ws` socket served by graphql-ws' protocol core (`makeServer`), in place of the library's
 * own `useServer` adapter (issue 53, item 9a). That adapter hands every message to the protocol
 * at once, and the protocol answers each `ping` with a `pong` into the socket's send buffer,
 * before `connection_init` too: a client that sends pings and never reads grew the process by
 * gigabytes. No hook of the library runs before a message is handled (`onPing` runs after the
 * pong is decided; throwing from it is answered 4500 and printed to the console), so the gate is
 * here, around the library, where a message arrives:
 * - before each message and each WebSocket-level ping frame (which `ws` answers by itself), the
 *   socket's unsent bytes are checked; past the bound it is closed with 1008 and the reason, and
 *   cut a second later (a client that does not read would never take the close frame);
 * - before `connection_ack`, only `connection_init` is accepted: anything else closes with 4401
 *   (the protocol's code for a `subscribe` before the ack), a second `connection_init` with
 *   4429 (the library), an unparsable message with 4400.
 * The rest is the library's adapter as it was: the subprotocol choice, a ping every heartbeat
 * (no pong within the next one cuts the socket), the close handed to the protocol.
 */
import type { IncomingMessage } from 'node:http';
import { CloseCode, MessageType, parseMessage, type Context, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';

/** What Outrigger keeps per socket, reachable from the library's hooks as `ctx.extra`. */
export interface SocketExtra {
  readonly socket: WebSocket;
  readonly request: IncomingMessage;
  /** The library's context, set by `onConnect` (its `acknowledged` and `subscriptions` are read here). */
  context?: Context<Record<string, unknown>, SocketExtra>;
  /** Since when an acknowledged socket has had no subscription (0: it has one, or is not acknowledged). */
  idleSince: number;
}

export interface ServeOptions {
  readonly heartbeatMs: number;
  readonly maxUnsentBytes: number;
  /** Told once when a socket is closed for not reading (logged by the caller). */
  onUnread(extra: SocketExtra, unsent: number): void;
  /** An error the library raised while handling a message (logged by the caller). */
  onError(error: unknown): void;
  /** A frame `ws` refused (oversized, malformed): it has closed the socket with 1009 or 1002; the caller logs it. */
  onBadFrame(extra: SocketExtra, error: Error & { code?: string }): void;
}

export function serveSocket(server: Server<SocketExtra>, extra: SocketExtra, o: ServeOptions): void {
  const { socket } = extra;
  let cut = false;
  /** True when the socket holds too much unsent: then it is closed and nothing more is handled. */
  const overflowing = (): boolean => {
    if (cut) return true;
    const unsent = socket.bufferedAmount;
    if (unsent <= o.maxUnsentBytes) return false;
    cut = true;
    o.onUnread(extra, unsent);
    closeSoon(socket, 1008, `the client does not read: more than ${o.maxUnsentBytes} bytes wait unsent`);
    return true;
  };

  let pongWait: NodeJS.Timeout | null = null;
  socket.on('pong', () => {
    if (pongWait) clearTimeout(pongWait);
    pongWait = null;
  });
  const heartbeat = setInterval(() => {
    if (socket.readyState !== socket.OPEN || overflowing() || pongWait) return;
    pongWait = setTimeout(() => socket.terminate(), o.heartbeatMs);
    socket.ping();
  }, o.heartbeatMs);
  // `ws` has already queued its pong (autoPong); the next frame of a client that does not read is refused.
  socket.on('ping', () => void overflowing());

  let handle: ((data: string) => Promise<void>) | undefined;
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: (data) =>
        new Promise<void>((resolve, reject) => {
          if (socket.readyState !== socket.OPEN) return resolve();
          // A write that fails because the socket was closed or cut meanwhile is no error of the
          // server's: rejecting would log one line per message still queued (thousands when cut).
          socket.send(data, (error) => (error && socket.readyState === socket.OPEN ? reject(error) : resolve()));
        }),
      close: (code, reason) => closeSoon(socket, code, reason),
      onMessage: (cb) => {
        handle = cb;
      },
    },
    extra,
  );
  socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
    if (socket.readyState !== socket.OPEN || overflowing() || !handle) return;
    const text = String(data);
    if (!extra.context?.acknowledged) {
      let type: string;
      try {
        type = parseMessage(text).type;
      } catch {
        return closeSoon(socket, CloseCode.BadRequest, 'Invalid message received');
      }
      if (type !== MessageType.ConnectionInit) return closeSoon(socket, CloseCode.Unauthorized, `Unauthorized: only connection_init is accepted before connection_ack (got ${type})`.slice(0, 120));
    }
    handle(text).catch((error: unknown) => {
      if (socket.readyState !== socket.OPEN) return;
      o.onError(error);
      closeSoon(socket, CloseCode.InternalServerError, 'Internal server error');
    });
  });
  // Errors of a server socket are the peer's (bad frames: `ws` has closed with 1002/1009 already):
  // told to the caller, which logs them as one JSON line; never left to Node's multi-line trace.
  socket.on('error', (error: Error & { code?: string }) => o.onBadFrame(extra, error));
  socket.once('close', (code: number, reason: Buffer) => {
    clearInterval(heartbeat);
    if (pongWait) clearTimeout(pongWait);
    void closed(code, String(reason)).catch(o.onError);
  });
}

/** Closes acknowledged sockets that have had no subscription for `idleMs` (swept every second or so). */
export function closeIdle(sockets: Iterable<SocketExtra>, idleMs: number, now: number): void {
  for (const extra of sockets) {
    const ctx = extra.context;
    if (!ctx?.acknowledged || Object.keys(ctx.subscriptions).length > 0) {
      extra.idleSince = 0;
      continue;
    }
    if (extra.idleSince === 0) extra.idleSince = now;
    else if (now - extra.idleSince >= idleMs && extra.socket.readyState === extra.socket.OPEN) {
      closeSoon(extra.socket, 1000, `closed after ${Math.round(idleMs / 1000)} s without a subscription (subscriptions.webSockets.idleSeconds)`);
    }
  }
}

/**
 * Closes with `code` and cuts the connection if the client has not answered the close within
 * 2 s: `ws` waits 30 s for the closing handshake, reading (and dropping) whatever a client that
 * does not read keeps sending all that time.
 */
export function closeSoon(socket: WebSocket, code?: number, reason?: string): void {
  socket.close(code, reason);
  setTimeout(() => socket.terminate(), 2000).unref();
}
