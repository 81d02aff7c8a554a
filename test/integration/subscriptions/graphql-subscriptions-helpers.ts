/**
 * Shared by the GraphQL subscription tests (integration, adversarial, bench): an app with a
 * `Subscription` type (SPEC §6.5), the permissions that make alice and bob readers of their own
 * orders (readFilter, secret hidden), carol a reader of every order, and SSE / WebSocket clients:
 * the real `graphql-sse` and `graphql-ws` clients, and a raw SSE reader for `id:` and
 * `Last-Event-ID`.
 */
import { expect } from 'vitest';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { call } from '../graphql/graphql-helpers.js';
import { until } from '../../support/wait.js';

export const SUB_SCHEMA = /* GraphQL */ `
  type Order {
    _id: ObjectId
    number: Int
    owner: String
    status: String
    total: Int
    secret: String
    pad: String
  }
  type OrderChange {
    op: String
    id: ID
    _id: ObjectId
    document: Order
  }
  type Query {
    orders: [Order]
  }
  type Mutation {
    createOrder(number: Int!, status: String): Order
    setStatus(id: ID!, status: String!): Order
    removeOrder(id: ID!): Boolean
    deleteOrder(id: ID!): Order
  }
  type Subscription {
    orderChanged(status: String): OrderChange
    myOrders: OrderChange
    orderById(id: ObjectId!): OrderChange
  }
`;

const orders = { db: 'shop', collection: 'orders' };

export function subscriptionApp(id = 'subs', uri = 'subs'): Record<string, unknown> {
  return {
    _id: id,
    descriptor: { uri },
    schema: SUB_SCHEMA,
    mappings: {
      Query: { orders },
      Mutation: {
        createOrder: { ...orders, insert: { number: { $arg: 'number' }, status: { $arg: ['status', 'open'] }, owner: '@user.id', secret: 'hidden' } },
        setStatus: { ...orders, find: { _id: { $arg: 'id' } }, update: { $set: { status: { $arg: 'status' } } } },
        removeOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true },
        deleteOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true },
      },
      Subscription: {
        orderChanged: { ...orders, on: ['insert', 'update', 'delete'], find: { status: { $arg: 'status' } } },
        myOrders: { ...orders, on: ['insert', 'update'], find: { owner: '@user.id' } },
        orderById: { ...orders, on: ['update', 'delete'], find: { _id: { $arg: 'id' } } },
      },
    },
  };
}

/** alice and bob read their own orders (secret hidden) and write; carol reads every order; all use the app. */
export async function putSubscriptionPermissions(base: string, auth: string, uri = 'subs'): Promise<void> {
  const put = async (id: string, doc: unknown) => expect((await call(base, `/_admin/acl/${id}`, { method: 'PUT', auth, body: doc })).status).toBe(201);
  await put('graphql-subs', { predicate: `path-prefix(/graphql/${uri})`, roles: ['owner', 'everything'], priority: 1 });
  await put('own-orders', { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['owner'], priority: 10, mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } } });
  await put('all-orders', { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['everything'], priority: 10 });
  await put('write-orders', { predicate: '(method(POST) or method(PUT) or method(PATCH) or method(DELETE)) and path-prefix(/shop/orders)', roles: ['owner', 'everything'], priority: 5 });
  await put('keys', { predicate: 'path-prefix(/keys)', roles: ['owner'], priority: 1, apiKeys: { roles: ['owner'] } });
}

export const hex = (n: number) => n.toString(16).padStart(24, '0');

/** What a subscriber received, as the clients hand it over. */
export interface Received {
  values: Array<{ data?: Record<string, unknown> | null; errors?: Array<{ message: string; extensions?: Record<string, unknown> }> }>;
  completed: boolean;
  error: unknown;
  close(): void;
}

/** A subscription through the real `graphql-sse` client (distinct connections mode). */
export function sseSubscribe(base: string, uri: string, query: string, opts: { auth?: string; variables?: Record<string, unknown> } = {}): Received {
  const client = createSseClient({ url: `${base}/graphql/${uri}`, headers: opts.auth ? { authorization: opts.auth } : {}, retryAttempts: 0 });
  const out: Received = { values: [], completed: false, error: undefined, close: () => {} };
  const dispose = client.subscribe(
    { query, ...(opts.variables ? { variables: opts.variables } : {}) },
    {
      next: (v) => void out.values.push(v as Received['values'][number]),
      error: (e) => void (out.error = e),
      complete: () => void (out.completed = true),
    },
  );
  out.close = () => {
    dispose();
    client.dispose();
  };
  return out;
}

/** A subscription through the real `graphql-ws` client; credentials in connection_init's payload. */
export function wsSubscribe(base: string, uri: string, query: string, opts: { auth?: string; variables?: Record<string, unknown> } = {}): Received & { closeEvent?: { code: number; reason: string } } {
  const out: Received & { closeEvent?: { code: number; reason: string } } = { values: [], completed: false, error: undefined, close: () => {} };
  const client = createWsClient({
    url: `${base.replace(/^http/, 'ws')}/graphql/${uri}`,
    webSocketImpl: WebSocket,
    connectionParams: opts.auth ? { authorization: opts.auth } : {},
    retryAttempts: 0,
    lazy: false,
    on: { closed: (e) => void (out.closeEvent = { code: (e as { code: number }).code, reason: String((e as { reason: unknown }).reason) }) },
  });
  const dispose = client.subscribe(
    { query, ...(opts.variables ? { variables: opts.variables } : {}) },
    {
      next: (v) => void out.values.push(v as Received['values'][number]),
      error: (e) => void (out.error = e),
      complete: () => void (out.completed = true),
    },
  );
  out.close = () => {
    dispose();
    void client.dispose();
  };
  return out;
}

export interface SseEvent {
  event?: string;
  id?: string;
  retry?: string;
  data?: string;
  comment?: string;
}

/** A raw SSE reader (fetch): every event with its `id:`, for resume rows. */
export async function rawSse(base: string, uri: string, query: string, opts: { auth?: string; lastEventId?: string; variables?: Record<string, unknown> } = {}) {
  const controller = new AbortController();
  const res = await fetch(`${base}/graphql/${uri}`, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      ...(opts.auth ? { authorization: opts.auth } : {}),
      ...(opts.lastEventId !== undefined ? { 'last-event-id': opts.lastEventId } : {}),
    },
    body: JSON.stringify({ query, ...(opts.variables ? { variables: opts.variables } : {}) }),
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  let ended = false;
  const answer = res.status === 200 ? undefined : res.text().catch(() => '');
  const reading = (async () => {
    if (!res.body || answer) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const e: SseEvent = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) e.comment = line.slice(1);
            else {
              const colon = line.indexOf(':');
              const key = line.slice(0, colon) as keyof SseEvent;
              e[key] = line.slice(colon + 1).trimStart();
            }
          }
          events.push(e);
        }
      }
    } catch {
      // aborted
    }
    ended = true;
  })();
  const nexts = () => events.filter((e) => e.event === 'next').map((e) => ({ id: e.id, payload: JSON.parse(e.data ?? '{}') as Received['values'][number] }));
  return {
    status: res.status,
    headers: res.headers,
    events,
    nexts,
    get ended() {
      return ended;
    },
    async text() {
      return (await answer) ?? '';
    },
    async waitForNexts(n: number, timeoutMs = 10_000) {
      await until(() => nexts().length >= n, `${n} next events`, timeoutMs);
      return nexts();
    },
    close() {
      controller.abort();
      return reading;
    },
  };
}

/** Waits until a subscriber has received `n` values. */
export async function received(r: Received, n: number, timeoutMs = 10_000): Promise<Received['values']> {
  await until(() => r.values.length >= n || r.error !== undefined, `${n} subscription values`, timeoutMs);
  if (r.values.length < n) throw new Error(`the subscription failed: ${String((r.error as Error)?.message ?? JSON.stringify(r.error))}`);
  return r.values;
}

/** Open subscriptions on one replica (its Prometheus gauge), for waiting until clients are registered. */
export async function openSubscriptions(base: string): Promise<number> {
  const res = await fetch(`${base}/_metrics`);
  const text = await res.text();
  let n = 0;
  for (const m of text.matchAll(/^outrigger_graphql_subscriptions_open\{[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

/** Waits until a replica holds `n` open subscriptions. */
export async function subscribed(base: string, n: number): Promise<void> {
  await until(async () => (await openSubscriptions(base)) >= n, `${n} open subscriptions`);
}
