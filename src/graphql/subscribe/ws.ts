/**
 * GraphQL over WebSocket (SPEC §6.5), the `graphql-transport-ws` subprotocol, with the protocol
 * core of the `graphql-ws` library (`makeServer`) on a `ws` server that takes upgrades of
 * `/graphql/<uri>` only; ws/serve-socket.ts is the adapter between them (why not the library's
 * own: see there). Before the upgrade is accepted: a page of another site is refused (403, the
 * rule of `/mcp`, net/origin.ts), then the process and address bounds (503/429, ws/socket-bounds.ts),
 * then credentials as for queries: the upgrade request's `Authorization` header (401/403 as HTTP
 * answers), or, without one, `connection_init`'s payload `{"authorization": "Bearer ..."}` /
 * `"Basic ..."`, checked before `connection_ack` (a refusal closes with 4401 or 4403 and the
 * reason; too many sockets of one caller with 4429). Frames are capped (`maxPayload`, oversize
 * `connection_init` included: closed with 1009), frames that are not the protocol close with 4400
 * (the library), anything but `connection_init` before the ack with 4401, a socket whose unsent
 * bytes pass 1 MiB with 1008 whatever it sends, a ping every `subscriptions.heartbeatSeconds` (a
 * client that does not answer is cut), an acknowledged socket without a subscription for
 * `subscriptions.webSockets.idleSeconds` closes with 1000. Shutdown closes with 1001.
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, parse, type ExecutionArgs } from 'graphql';
import { handleProtocols, makeServer, type Context, type SubscribePayload } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { WebSocketBounds } from '../../config/subscriptions-config.js';
import { OutriggerError } from '../../errors.js';
import { originAllowed } from '../../net/origin.js';
import { RequestScope } from '../../http/scope.js';
import { clientAddressBucket } from '../../net/client-address.js';
import { answerUpgrade } from '../../http/upgrade/route-upgrades.js';
import type { CompiledApp } from '../compile/compile-app.js';
import type { Authenticate } from './caller.js';
import type { SubscriptionService } from './service.js';
import type { SseOpen } from './sse.js';
import type { SubscriptionStream } from './subscription.js';
import { MAX_UNSENT_BYTES } from './sse.js';
import { closeIdle, closeSoon, serveSocket, type ServeOptions, type SocketExtra } from './ws/serve-socket.js';
import { isRefusal, SocketBounds, type Admission, type Refusal } from './ws/socket-bounds.js';

/** Largest WebSocket message (a `subscribe` with its query and variables, or `connection_init`). */
export const MAX_WS_MESSAGE_BYTES = 128 * 1024;

export interface WsParts {
  readonly service: SubscriptionService;
  /** The app served at a request path (after the GraphQL route), or undefined. */
  lookup(path: string): { app: CompiledApp; appPath: string } | undefined;
  readonly prefix: string;
  readonly heartbeatMs: number;
  clientIp(req: IncomingMessage): string;
  authenticate(): Authenticate | undefined;
  authorize(scope: RequestScope): void;
  /** Rate limits (SPEC §10): each subscription started on a socket counts once, as an SSE subscription's request does; throws 429/503. */
  limit?: (scope: RequestScope) => Promise<void> | void;
  callerOf(scope: RequestScope, app: CompiledApp, appPath: string): SseOpen;
  readonly bounds: WebSocketBounds;
  /** `service.publicUrl`'s origin: pages of it (and loopback pages) may open sockets, as for `/mcp`. */
  readonly ownOrigin: string;
  readonly logger: Logger;
}

interface Pending {
  app: CompiledApp;
  appPath: string;
  scope: RequestScope;
  /** The upgrade's Authorization header was checked already. */
  authenticated: boolean;
  admission: Admission;
}

/** Refusals and cuts are logged at most once per reason every 10 s, with how many were not (a flood must not become one line each). */
const REFUSAL_LOG_EVERY_MS = 10_000;

export function createWsTransport(parts: WsParts) {
  const { logger } = parts;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_MESSAGE_BYTES, perMessageDeflate: false, handleProtocols });
  const pending = new WeakMap<IncomingMessage, Pending>();
  const sockets = new Set<SocketExtra>();
  const bounds = new SocketBounds(parts.bounds);
  if (bounds.capped)
    logger.warn(
      { maxPerProcess: bounds.maxPerProcess, configured: parts.bounds.maxPerProcess },
      'subscriptions.webSockets.maxPerProcess is above half the open-file limit (ulimit -n); this replica takes at most maxPerProcess WebSockets',
    );

  const report = refusalReporter(logger);

  const server = makeServer<Record<string, unknown>, SocketExtra>({
    onConnect: onConnectOf(parts, pending, report),
    onSubscribe: onSubscribeOf(parts, pending),
    subscribe: (args) => (args.contextValue as { stream: SubscriptionStream }).stream,
  });

  const idleMs = parts.bounds.idleSeconds * 1000;
  let sweep: NodeJS.Timeout | undefined;
  const serve = (socket: WebSocket, req: IncomingMessage): void => {
    const extra: SocketExtra = { socket, request: req, idleSince: 0 };
    sockets.add(extra);
    // The sweep runs only while sockets are open.
    sweep ??= setInterval(() => closeIdle(sockets, idleMs, Date.now()), Math.min(1000, Math.max(250, idleMs / 4))).unref();
    socket.once('close', () => {
      sockets.delete(extra);
      if (sockets.size === 0 && sweep) sweep = void clearInterval(sweep);
    });
    serveSocket(server, extra, serveOptions(parts, pending, report));
  };

  /** Shutdown: every socket, with or without a subscription, closes with 1001 (a reconnect hint); cut if it lingers. */
  const closeAll = (): void => closeAllSockets(wss);

  /** Takes an upgrade of `/graphql/<uri>`; false when the path is not ours (the caller answers it). */
  const handleUpgrade = function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    if (!path.startsWith(`${parts.prefix}/`)) return false;
    // A browser sends Origin on every WebSocket and no preflight: a page of another site would open
    // a socket with the browser's cached Basic credentials. The rule of /mcp (net/origin.ts).
    const origin = req.headers.origin;
    if (typeof origin === 'string' && !originAllowed(origin, parts.ownOrigin)) {
      report('origin', { origin: origin.slice(0, 200) }, 'a WebSocket upgrade from a page of another site was refused 403');
      answer(socket, 403, `WebSockets from pages of ${origin.slice(0, 200)} are refused (this server accepts its own origin, ${parts.ownOrigin}, and loopback pages)`);
      return true;
    }
    const found = parts.lookup(path.slice(parts.prefix.length));
    if (!found) {
      answer(socket, 404, `no GraphQL app is served at ${path}`);
      return true;
    }
    // Counted before credentials are checked (a password check costs more than a refusal), held while they are.
    const clientIp = parts.clientIp(req);
    const admitted = bounds.admit(clientIp);
    if (isRefusal(admitted)) {
      refuseUpgrade(report, socket, admitted, { address: clientAddressBucket(clientIp) });
      return true;
    }
    socket.once('close', admitted.release);
    void (async () => {
      const header = req.headers.authorization;
      let scope: RequestScope;
      try {
        scope = await authenticated(parts, req, header);
        if (header !== undefined) parts.authorize(scope);
      } catch (error) {
        const e = error instanceof OutriggerError ? error : undefined;
        return answer(socket, e?.status ?? 403, e?.message ?? 'not allowed');
      }
      if (header !== undefined) {
        const refused = admitted.claim(scope.principal.id);
        if (refused) return refuseUpgrade(report, socket, refused, { address: admitted.address, principal: scope.principal.id });
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        pending.set(req, { app: found.app, appPath: found.appPath, scope, authenticated: header !== undefined, admission: admitted });
        serve(ws, req);
      });
    })().catch(() => socket.destroy());
    return true;
  };
  return { handleUpgrade, closeAll, bounds, openSockets: () => sockets.size };
}

type Report = (reason: string, fields: Record<string, unknown>, message: string) => void;
type WsContext = Context<Record<string, unknown>, SocketExtra>;

/** One JSON line per reason every REFUSAL_LOG_EVERY_MS: no credentials, the address as its bucket. */
/** What serve-socket tells its caller: sockets that do not read, library errors and refused frames, each one JSON line. */
function serveOptions(parts: WsParts, pending: WeakMap<IncomingMessage, Pending>, report: Report): ServeOptions {
  const address = (x: SocketExtra) => pending.get(x.request)?.admission.address;
  return {
    heartbeatMs: parts.heartbeatMs,
    maxUnsentBytes: MAX_UNSENT_BYTES,
    onUnread: (x, unsent) => report('unread', { address: address(x), unsent }, 'a WebSocket was closed (1008): the client sends but does not read its answers'),
    onError: (error) => parts.logger.error({ err: String(error) }, 'error while handling a GraphQL WebSocket message'),
    onBadFrame: (x, error) => report('frame', { address: address(x), code: error.code, error: error.message }, `a WebSocket was closed: the client sent a frame ws refused (${error.message})`),
  };
}

function refusalReporter(logger: Logger): Report {
  const logged = new Map<string, { at: number; since: number }>();
  return (reason, fields, message) => {
    const now = Date.now();
    const last = logged.get(reason);
    if (last !== undefined && now - last.at < REFUSAL_LOG_EVERY_MS) {
      last.since++;
      return;
    }
    logged.set(reason, { at: now, since: 0 });
    logger.warn({ event: 'websocket-refused', reason, ...fields, alsoRefusedSinceLastLine: last?.since ?? 0 }, message);
  };
}

/** `connection_init`: credentials sent in its payload are checked (when the upgrade had none), then the socket's bounds claim. */
function onConnectOf(parts: WsParts, pending: WeakMap<IncomingMessage, Pending>, report: Report): (ctx: WsContext) => Promise<boolean> {
  return async (ctx) => {
    const socket = ctx.extra.socket;
    const p = pending.get(ctx.extra.request);
    if (!p) return false;
    if (!p.authenticated) {
      const auth = ctx.connectionParams?.authorization;
      if (auth !== undefined && typeof auth !== 'string') return refuse(socket, 4400, 'connection_init payload.authorization must be a string ("Bearer ..." or "Basic ...")');
      try {
        p.scope = await authenticated(parts, p.scope.req, auth);
        parts.authorize(p.scope);
      } catch (error) {
        const e = error instanceof OutriggerError ? error : undefined;
        return refuse(socket, e?.status === 401 ? 4401 : 4403, e?.message ?? 'not allowed');
      }
      p.authenticated = true;
      const refused = p.admission.claim(p.scope.principal.id);
      if (refused) {
        report(refused.bound, { address: p.admission.address, principal: p.scope.principal.id }, `a WebSocket was refused after connection_init (${refused.bound})`);
        return refuse(socket, 4429, refused.message);
      }
    }
    // The library's context: the gate (ws/serve-socket.ts) and the idle sweep read it.
    ctx.extra.context = ctx;
    return true;
  };
}

/** `subscribe`: the rate limit, then the subscription opened; a refusal is sent with its extensions and completes at once. */
function onSubscribeOf(parts: WsParts, pending: WeakMap<IncomingMessage, Pending>): (ctx: WsContext, id: string, payload: SubscribePayload) => Promise<ExecutionArgs | readonly GraphQLError[]> {
  return async (ctx, id, payload) => {
    const p = pending.get(ctx.extra.request);
    const socket = ctx.extra.socket;
    if (!p || socket.readyState !== socket.OPEN) return [new GraphQLError('the connection is not initialised')];
    try {
      await parts.limit?.(p.scope);
    } catch (error) {
      const e = error instanceof OutriggerError ? error : undefined;
      const errors = [{ message: e?.message ?? 'the rate limit could not be checked', extensions: { code: e?.code ?? 'RATE_LIMITS_UNAVAILABLE' } }];
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ id, type: 'error', payload: errors }));
      return { schema: p.app.schema, document: NOTHING, contextValue: { stream: ended() } } as ExecutionArgs;
    }
    const opened = await parts.service.open({
      ...parts.callerOf(p.scope, p.app, p.appPath),
      params: payload,
      transport: 'ws',
      shutdown: () => socket.close(1001, 'this server is shutting down; reconnect'),
      onYield: () => {
        if (socket.bufferedAmount > MAX_UNSENT_BYTES) socket.terminate();
      },
      unsent: () => socket.bufferedAmount,
      // The library waits on the unread socket; the error it would send cannot pass either.
      onEnded: (reason) => {
        if (reason?.code === 'SLOW_SUBSCRIBER') socket.terminate();
      },
    });
    if (!opened.ok) {
      // Sent here, with each error's extensions (the library would want GraphQLErrors of its own graphql instance).
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ id, type: 'error', payload: opened.errors }));
      return { schema: p.app.schema, document: NOTHING, contextValue: { stream: ended() } } as ExecutionArgs;
    }
    const args: ExecutionArgs = {
      schema: p.app.schema,
      document: opened.prepared.document,
      ...(opened.prepared.operationName ? { operationName: opened.prepared.operationName } : {}),
      contextValue: { stream: opened.stream },
    };
    return args;
  };
}

function closeAllSockets(wss: WebSocketServer): void {
  for (const client of wss.clients) {
    client.close(1001, 'this server is shutting down; reconnect');
    setTimeout(() => client.terminate(), 1000).unref();
  }
}

function refuseUpgrade(report: Report, socket: Duplex, refusal: Refusal, fields: Record<string, unknown>): void {
  report(refusal.bound, fields, `a WebSocket upgrade was refused ${refusal.status} (${refusal.bound})`);
  answer(socket, refusal.status, refusal.message, refusal.status === 503 ? { 'retry-after': '5' } : {});
}

/** The document of a refused subscription (its error was sent): the library then completes it. */
const NOTHING = parse('subscription { __typename }');

function ended(): AsyncIterableIterator<never> {
  return {
    next: async () => ({ done: true, value: undefined }),
    return: async () => ({ done: true, value: undefined }),
    throw: async () => ({ done: true, value: undefined }),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** A scope for the upgrade request, authenticated with `authorization` (the header's, or `connection_init`'s). */
async function authenticated(parts: WsParts, req: IncomingMessage, authorization: string | undefined): Promise<RequestScope> {
  const headers = { ...req.headers };
  if (authorization !== undefined) headers.authorization = authorization;
  else delete headers.authorization;
  // POST: the ACL decides as for a POST to /graphql/<uri> (SPEC §6.5).
  const asPost = Object.create(req, { headers: { value: headers }, method: { value: 'POST' } }) as IncomingMessage;
  const scope = new RequestScope(asPost, new ServerResponse(asPost), parts.clientIp(req), Boolean((req.socket as { encrypted?: boolean }).encrypted));
  scope.routeKind = 'graphql'; // limits (SPEC §10) apply as to the app's own route
  const authenticate = parts.authenticate();
  if (authenticate) scope.principal = await authenticate(scope);
  return scope;
}

function refuse(socket: WebSocket, code: number, reason: string): false {
  // A close reason is at most 123 bytes.
  closeSoon(socket, code, Buffer.from(reason).subarray(0, 120).toString());
  return false;
}

function answer(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
  answerUpgrade(socket, status, JSON.stringify({ errors: [{ message }] }), headers);
}
