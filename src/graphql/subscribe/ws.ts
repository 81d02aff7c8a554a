/**
 * GraphQL over WebSocket (SPEC §6.5), the `graphql-transport-ws` subprotocol, with the
 * `graphql-ws` library on a `ws` server that takes upgrades of `/graphql/<uri>` only. Credentials
 * as for queries: the upgrade request's `Authorization` header (checked before the upgrade is
 * accepted: 401/403 as HTTP answers), or, without one, `connection_init`'s payload
 * `{"authorization": "Bearer ..."}` / `"Basic ..."`, checked before `connection_ack` (a refusal
 * closes with 4401 or 4403 and the reason). Frames are capped (`maxPayload`, oversize
 * `connection_init` included: closed with 1009), frames that are not the protocol close with 4400
 * (the library), a ping every `subscriptions.heartbeatSeconds` (a client that does not answer is
 * cut), and a socket whose unsent bytes pass 1 MiB is cut too. Shutdown closes with 1001.
 */
import type { IncomingMessage } from 'node:http';
import { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, parse, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { OutriggerError } from '../../errors.js';
import { RequestScope } from '../../http/scope.js';
import type { CompiledApp } from '../compile/compile-app.js';
import type { Authenticate } from './caller.js';
import type { SubscriptionService } from './service.js';
import type { SseOpen } from './sse.js';
import type { SubscriptionStream } from './subscription.js';
import { MAX_UNSENT_BYTES } from './sse.js';

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
}

interface Pending {
  app: CompiledApp;
  appPath: string;
  scope: RequestScope;
  /** The upgrade's Authorization header was checked already. */
  authenticated: boolean;
}

export function createWsTransport(parts: WsParts) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_MESSAGE_BYTES, perMessageDeflate: false });
  const pending = new WeakMap<IncomingMessage, Pending>();

  useServer<Record<string, unknown>, { stream?: SubscriptionStream }>(
    {
      isProd: true,
      onConnect: async (ctx) => {
        const p = pending.get(ctx.extra.request);
        if (!p) return false;
        if (!p.authenticated) {
          const auth = ctx.connectionParams?.authorization;
          if (auth !== undefined && typeof auth !== 'string') return refuse(ctx.extra.socket, 4400, 'connection_init payload.authorization must be a string ("Bearer ..." or "Basic ...")');
          try {
            p.scope = await authenticated(parts, p.scope.req, auth);
            parts.authorize(p.scope);
          } catch (error) {
            const e = error instanceof OutriggerError ? error : undefined;
            return refuse(ctx.extra.socket, e?.status === 401 ? 4401 : 4403, e?.message ?? 'not allowed');
          }
          p.authenticated = true;
        }
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const p = pending.get(ctx.extra.request);
        if (!p) return [new GraphQLError('the connection is not initialised')];
        const socket = ctx.extra.socket;
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
      },
      subscribe: (args) => (args.contextValue as { stream: SubscriptionStream }).stream,
    },
    wss,
    parts.heartbeatMs,
  );

  /** Shutdown: every socket, with or without a subscription, closes with 1001 (a reconnect hint); cut if it lingers. */
  const closeAll = (): void => {
    for (const client of wss.clients) {
      client.close(1001, 'this server is shutting down; reconnect');
      setTimeout(() => client.terminate(), 1000).unref();
    }
  };

  /** Takes an upgrade of `/graphql/<uri>`; false when the path is not ours (the caller answers it). */
  const handleUpgrade = function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = req.url ?? '/';
    const path = url.split('?')[0] ?? '/';
    if (!path.startsWith(`${parts.prefix}/`)) return false;
    void (async () => {
      const found = parts.lookup(path.slice(parts.prefix.length));
      if (!found) return answer(socket, 404, `no GraphQL app is served at ${path}`);
      const header = req.headers.authorization;
      let scope: RequestScope;
      try {
        scope = await authenticated(parts, req, header);
        if (header !== undefined) parts.authorize(scope);
      } catch (error) {
        const e = error instanceof OutriggerError ? error : undefined;
        return answer(socket, e?.status ?? 403, e?.message ?? 'not allowed');
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        pending.set(req, { app: found.app, appPath: found.appPath, scope, authenticated: header !== undefined });
        wss.emit('connection', ws, req);
      });
    })().catch(() => socket.destroy());
    return true;
  };
  return { handleUpgrade, closeAll };
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
  socket.close(code, Buffer.from(reason).subarray(0, 120).toString());
  return false;
}

function answer(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({ errors: [{ message }] });
  socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Forbidden'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
