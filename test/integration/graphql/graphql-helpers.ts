/**
 * Shared by the GraphQL integration tests: HTTP calls through a running Outrigger, the shop data
 * the RESTHeart stand-in serves, and an app document using every mapping form.
 */
import type { ReceivedRequest, StandinBackend } from '../../../examples/standin-backend/index.js';
import { call, type CallResult } from '../../support/clients/http-client.js';
export { call, type CallResult };

/** `POST /graphql/<uri>` with a JSON body, accepting RESTHeart's media type (and so its status codes). */
export function gql(base: string, uri: string, query: string, opts: { variables?: Record<string, unknown>; auth?: string; operationName?: string } = {}) {
  return call(base, `/graphql/${uri}`, {
    method: 'POST',
    auth: opts.auth,
    headers: { accept: 'application/graphql-response+json' },
    body: { query, ...(opts.variables ? { variables: opts.variables } : {}), ...(opts.operationName ? { operationName: opts.operationName } : {}) },
  });
}

/** Collection reads (GET under /shop) the stand-in received. */
export function collectionReads(backend: StandinBackend, collection?: string): ReceivedRequest[] {
  return backend.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/shop/') && (collection === undefined || r.path === `/shop/${collection}`));
}

export function filterOf(read: ReceivedRequest): unknown {
  const f = read.query.get('filter');
  return f === null ? undefined : JSON.parse(f);
}

export const oid = (n: number) => ({ $oid: n.toString(16).padStart(24, '0') });
export const OWNERS = ['alice', 'bob', 'carol'];

/** 100 users and 100 orders (order i belongs to user u<i>), plus products for a non-equality join. */
export function shopData() {
  const users = Array.from({ length: 100 }, (_, i) => ({
    _id: `u${i + 1}`,
    name: `User ${i + 1}`,
    address: { city: i % 2 === 0 ? 'Rome' : 'Oslo', zip: String(10000 + i) },
    tags: [`t${i + 1}`, 'shared'],
  }));
  const orders = Array.from({ length: 100 }, (_, i) => ({
    _id: oid(i + 1),
    number: i + 1,
    userId: `u${i + 1}`,
    owner: OWNERS[i % 3],
    status: i % 4 === 0 ? 'open' : 'closed',
    total: (i + 1) * 10,
    secret: `secret-${i + 1}`,
    createdAt: { $date: Date.UTC(2024, 0, 1) + i * 86_400_000 },
    items: [{ sku: `sku-${i + 1}`, qty: 1 + (i % 3) }],
  }));
  // Three extra orders of u1, so a user's orders (sort, skip, limit per parent) have something to page.
  for (let k = 1; k <= 3; k++)
    orders.push({ _id: oid(1000 + k), number: 1000 + k, userId: 'u1', owner: 'alice', status: 'open', total: k, secret: 'x', createdAt: { $date: Date.UTC(2023, 0, k) }, items: [] });
  const products = [
    { _id: 'p1', name: 'dinghy', category: 'boats', price: 500 },
    { _id: 'p2', name: 'canoe', category: 'boats', price: 300 },
    { _id: 'p3', name: 'kayak', category: 'boats', price: 200 },
    { _id: 'p4', name: 'oar', category: 'parts', price: 20 },
    { _id: 'p5', name: 'rope', category: 'parts', price: 5 },
  ];
  return { shop: { users, orders, products } };
}

export const SHOP_SCHEMA = /* GraphQL */ `
  enum Status {
    OPEN
    CLOSED
  }
  type Item {
    sku: String
    qty: Int
  }
  type User {
    id: String
    name: String
    city: String
    firstTag: String
    orders(status: Status, skip: Int = 0, limit: Int = 2): [Order]
  }
  type Order {
    _id: ObjectId
    number: Int
    owner: String
    status: Status
    total: Int
    secret: String
    createdAt: DateTime
    items: [Item]
    firstSku: String
    user: User
  }
  type Product {
    name: String
    price: Int
    cheaper: [Product]
  }
  input Range {
    min: Int
    max: Int
  }
  type Query {
    orders(status: Status, skip: Int = 0, limit: Int = 100): [Order]
    order(number: Int!): Order
    openOrders(status: Status): [Order]
    ordersInRange(range: Range!): [Order]
    ordersSorted(dir: Int!): [Order]
    users(city: String, limit: Int = 100): [User]
    products: [Product]
    search(filter: BsonDocument): [Order]
    refused: [Order]
  }
`;

/** An app document with every mapping form of SPEC §6.2/§6.3. */
export function shopApp(id = 'shop', uri = 'shop'): Record<string, unknown> {
  return {
    _id: id,
    descriptor: { name: 'Shop', description: 'orders and their users', uri },
    schema: SHOP_SCHEMA,
    mappings: {
      Status: { OPEN: 'open', CLOSED: 'closed' },
      User: {
        id: '_id',
        city: 'address.city',
        firstTag: 'tags.0',
        orders: { db: 'shop', collection: 'orders', find: { userId: { $fk: '_id' }, status: { $arg: 'status' } }, sort: { total: -1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
      },
      Order: {
        firstSku: 'items.0.sku',
        user: { db: 'shop', collection: 'users', find: { _id: { $fk: 'userId' } } },
      },
      Product: {
        cheaper: { db: 'shop', collection: 'products', find: { category: { $fk: 'category' }, price: { $lt: { $fk: 'price' } } }, sort: { price: -1 } },
      },
      Query: {
        orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, sort: { number: 1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
        order: { db: 'shop', collection: 'orders', find: { number: { $arg: 'number' } } },
        openOrders: { db: 'shop', collection: 'orders', find: { status: { $arg: ['status', 'open'] } }, sort: { number: 1 }, limit: 5 },
        ordersInRange: { db: 'shop', collection: 'orders', find: { total: { $gte: { $arg: 'range.min' }, $lte: { $arg: 'range.max' } } }, sort: { total: 1 } },
        ordersSorted: { db: 'shop', collection: 'orders', sort: { number: { $arg: 'dir' } }, limit: 3 },
        users: { db: 'shop', collection: 'users', find: { 'address.city': { $arg: 'city' } }, sort: { _id: 1 }, limit: { $arg: 'limit' } },
        products: { db: 'shop', collection: 'products', sort: { price: -1 } },
        search: { db: 'shop', collection: 'orders', find: { $and: [{ $arg: 'filter' }] }, limit: 5 },
        // The backend answers 400 to an operator it does not know: a backend error on demand.
        refused: { db: 'shop', collection: 'orders', find: { total: { $noSuchOperator: 1 } } },
      },
    },
  };
}

/** Polls until `check` returns true; answers the milliseconds it took, or throws after `timeoutMs`. */
export async function pollUntil(check: () => Promise<boolean>, timeoutMs = 5000, intervalMs = 10): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`not seen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
