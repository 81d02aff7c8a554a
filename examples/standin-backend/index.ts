/**
 * A RESTHeart-compatible stand-in backend: a small real HTTP server (node:http) over in-memory
 * collections, filters evaluated by mingo. Tests start it on a free port to see exactly what a
 * proxy sent (the request log records who the stand-in took the caller to be); the quickstart
 * runs it as the demo backend (main.ts). Behaviour and deliberate differences: README.md.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Authenticator, type Identity, type JwtOptions, type StandinUser } from './auth.js';
import { HttpProblem, errorBody, readBody, sendJson, sendProblem } from './http.js';
import { handleMongo } from './mongo-routes.js';
import { BASIC_CHALLENGE, handleRoles, handleToken } from './services.js';
import { Store, type Doc } from './store.js';

export interface StandinOptions {
  /** 0 = a free port (default). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Seed documents: db -> collection -> documents (copied; the caller's objects are never changed). */
  data?: Record<string, Record<string, Array<Record<string, unknown>>>>;
  /** Users that Basic authentication (and /roles) knows. */
  users?: Array<{ id: string; password: string; roles: string[] }>;
  /** Accept Bearer JWTs like RESTHeart's jwtAuthenticationMechanism (HS256/384/512). */
  jwt?: { secret: string; issuer?: string; audience?: string; algorithms?: string[] };
}

export interface ReceivedRequest {
  method: string;
  /** Path and query exactly as received. */
  url: string;
  /** The path part of `url`, still percent-encoded. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  identity: { via: 'basic' | 'jwt' | 'anonymous' | 'invalid'; id?: string; roles?: string[] };
  body?: string;
}

export interface StandinBackend {
  /** e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  port: number;
  /** Every request received, in arrival order. */
  requests: ReceivedRequest[];
  clearRequests(): void;
  /** A copy of a collection's current documents ([] when it does not exist). */
  collection(db: string, coll: string): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Longer than any client's idle timeout (undici: 4 s; load balancers: 60 s) so we never close first. */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export async function startStandinBackend(options: StandinOptions = {}): Promise<StandinBackend> {
  validateOptions(options);
  const store = new Store(options.data as Record<string, Record<string, Doc[]>> | undefined);
  const auth = new Authenticator((options.users ?? []) as StandinUser[], options.jwt as JwtOptions | undefined);
  const requests: ReceivedRequest[] = [];

  const server = createServer((req, res) => {
    handle(req, res, store, auth, requests).catch((err: unknown) => {
      const problem = err instanceof HttpProblem ? err : new HttpProblem(500, `stand-in error: ${(err as Error).message}`);
      if (!res.headersSent) sendProblem(res, problem);
      else res.destroy();
    });
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    requests,
    clearRequests: () => {
      requests.length = 0; // in place: tests may hold a reference to the array
    },
    collection: (db, coll) => structuredClone(store.documents(db, coll) ?? []),
    close: () => {
      // Idempotent: a test's afterEach and afterAll may both close the same backend.
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections(); // idle keep-alive sockets would otherwise hold close() open
      });
      return closing;
    },
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, store: Store, auth: Authenticator, requests: ReceivedRequest[]): Promise<void> {
  const rawUrl = req.url ?? '/';
  const method = (req.method ?? 'GET').toUpperCase();
  const url = new URL(rawUrl, 'http://standin.invalid');
  let body: string | undefined;
  let bodyProblem: HttpProblem | undefined;
  try {
    body = await readBody(req);
  } catch (err) {
    if (!(err instanceof HttpProblem)) throw err;
    bodyProblem = err;
  }
  const { identity, problem } = await auth.identify(req.headers);
  requests.push({
    method,
    url: rawUrl,
    path: url.pathname,
    query: url.searchParams,
    headers: { ...req.headers },
    identity: { ...identity },
    ...(body !== undefined ? { body } : {}),
  });

  if (bodyProblem) throw bodyProblem;
  // Wrong credentials fail everywhere, as in RESTHeart: they are never downgraded to anonymous.
  if (identity.via === 'invalid') {
    return sendJson(res, 401, errorBody(401, problem ?? 'authentication failed'), BASIC_CHALLENGE);
  }
  await route(res, method, url, req, body, identity, store, auth);
}

function route(res: ServerResponse, method: string, url: URL, req: IncomingMessage, body: string | undefined, identity: Identity, store: Store, auth: Authenticator): void | Promise<void> {
  const segments = pathSegments(url.pathname);
  if (segments[0] === 'roles') return handleRoles(res, method, segments, identity);
  const path = `/${segments.join('/')}`;
  if (path === '/token' || path === '/token/cookie') return handleToken(res, method, path, identity, auth);
  handleMongo(
    res,
    {
      method,
      segments,
      query: url.searchParams,
      headers: req.headers,
      body,
      baseUrl: `http://${req.headers.host ?? 'localhost'}`,
      identity,
    },
    store,
  );
}

/** Decoded path segments; empty ones dropped, since RESTHeart ignores trailing and doubled slashes. */
function pathSegments(pathname: string): string[] {
  try {
    return pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new HttpProblem(400, `the path ${pathname} is not valid percent-encoding`);
  }
}

/** Options are checked once, when the server is built, with messages naming the field. */
function validateOptions(options: StandinOptions): void {
  const fail = (message: string): never => {
    throw new TypeError(`standin backend: ${message}`);
  };
  for (const [i, user] of (options.users ?? []).entries()) {
    if (typeof user?.id !== 'string' || user.id === '') fail(`users[${i}].id must be a non-empty string`);
    if (typeof user.password !== 'string') fail(`users[${i}].password must be a string`);
    if (!Array.isArray(user.roles) || !user.roles.every((r) => typeof r === 'string')) {
      fail(`users[${i}].roles must be an array of strings`);
    }
  }
  if (options.jwt !== undefined && (typeof options.jwt.secret !== 'string' || options.jwt.secret === '')) {
    fail('jwt.secret must be a non-empty string');
  }
  for (const [db, collections] of Object.entries(options.data ?? {})) {
    for (const [coll, docs] of Object.entries(collections ?? {})) {
      if (!Array.isArray(docs)) fail(`data.${db}.${coll} must be an array of documents`);
    }
  }
}
