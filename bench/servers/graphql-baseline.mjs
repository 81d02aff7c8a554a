/**
 * The hand-written GraphQL baseline: node:http + graphql-js (buildSchema, resolvers by hand) +
 * an undici Pool to the same stand-in backend, with a per-request batching loader that does what
 * DataLoader does for these queries (collect every `load(id)` of one tick, one `$in` read, answer
 * each): the users of orders, and (nested shape, issue 39) each user's orders, newest first. It sends the backend exactly the reads Outrigger sends for the same query (same paths,
 * filters, sort and page size), and, like Outrigger and as a careful hand-written server would,
 * caches parsed+validated documents by query text. NODE_ENV=production (notes §A4).
 * Usage: BACKEND=http://127.0.0.1:PORT node graphql-baseline.mjs
 */
import { createServer } from 'node:http';
import { buildSchema, execute, parse, validate } from 'graphql';
import { Pool } from 'undici';
import { countingServer } from './ipc.mjs';

const backend = new Pool(process.env.BACKEND, { connections: 64 });

const schema = buildSchema(`
  type User { id: String, name: String, city: String, recentOrders(limit: Int = 3): [Order] }
  type Guest { id: String }
  union Buyer = User | Guest
  type Order { number: Int, total: Int, status: String, user: User, buyer: Buyer }
  type Query { orders(limit: Int = 100): [Order] }
`);
// The union's members told apart as the Outrigger app's $typeResolver does (field-exists(city)).
schema.getType('Buyer').resolveType = (value) => ('city' in value ? 'User' : 'Guest');

async function readCollection(path) {
  const res = await backend.request({ method: 'GET', path, headers: { accept: 'application/json' } });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`backend answered ${res.statusCode} to ${path}`);
  }
  return res.body.json();
}

/**
 * A DataLoader-equivalent for one request: loads requested in the same tick are batched into one
 * call of `batch(keys)`, which returns values in key order; repeated keys share one promise.
 */
class BatchLoader {
  constructor(batch) {
    this.batch = batch;
    this.cache = new Map();
    this.pending = null;
  }

  load(key) {
    let promise = this.cache.get(key);
    if (promise) return promise;
    if (!this.pending) {
      this.pending = [];
      process.nextTick(() => this.dispatch());
    }
    promise = new Promise((resolve, reject) => this.pending.push({ key, resolve, reject }));
    this.cache.set(key, promise);
    return promise;
  }

  async dispatch() {
    const queue = this.pending;
    this.pending = null;
    try {
      const values = await this.batch(queue.map((q) => q.key));
      queue.forEach((q, i) => q.resolve(values[i]));
    } catch (error) {
      queue.forEach((q) => q.reject(error));
    }
  }
}

function usersById(ids) {
  const filter = JSON.stringify({ _id: { $in: ids } });
  return readCollection(`/restheart/users?filter=${encodeURIComponent(filter)}&sort=${encodeURIComponent('{"_id":1}')}&page=1&pagesize=1000`).then((docs) => {
    const byId = new Map(docs.map((d) => [d._id, d]));
    return ids.map((id) => byId.get(id) ?? null);
  });
}

/** Each user's orders, newest first: one `$in` read for every user of the tick, split back per user. */
function ordersByUser(ids) {
  const filter = JSON.stringify({ userId: { $in: ids } });
  return readCollection(`/restheart/orders?filter=${encodeURIComponent(filter)}&sort=${encodeURIComponent('{"number":-1}')}&page=1&pagesize=1000`).then((docs) => {
    const byUser = new Map(ids.map((id) => [id, []]));
    for (const d of docs) byUser.get(d.userId)?.push(d);
    return ids.map((id) => byUser.get(id));
  });
}

const rootValue = {
  orders: ({ limit }) => readCollection(`/restheart/orders?sort=${encodeURIComponent('{"number":1}')}&page=1&pagesize=${limit}`),
};
const fieldResolver = (source, args, context, info) => {
  if (info.parentType.name === 'Order' && (info.fieldName === 'user' || info.fieldName === 'buyer')) return context.users.load(source.userId);
  if (info.parentType.name === 'User' && info.fieldName === 'recentOrders') return context.ordersOf.load(source._id).then((list) => list.slice(0, args.limit));
  if ((info.parentType.name === 'User' || info.parentType.name === 'Guest') && info.fieldName === 'id') return source._id;
  const value = source[info.fieldName];
  return typeof value === 'function' ? value(args, context, info) : value;
};

const documents = new Map();
function prepare(query) {
  let entry = documents.get(query);
  if (!entry) {
    let document;
    try {
      document = parse(query);
    } catch (error) {
      return { errors: [error] };
    }
    const errors = validate(schema, document);
    entry = errors.length ? { errors } : { document };
    if (documents.size < 500) documents.set(query, entry);
  }
  return entry;
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = createServer((req, res) => {
  if (req.method !== 'POST') return send(res, 405, { errors: [{ message: 'POST only' }] });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    let params;
    try {
      params = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(res, 400, { errors: [{ message: 'the body is not JSON' }] });
    }
    const prepared = prepare(String(params.query ?? ''));
    if (prepared.errors) return send(res, 400, { errors: prepared.errors.map((e) => ({ message: e.message })) });
    const result = await execute({
      schema,
      document: prepared.document,
      rootValue,
      contextValue: { users: new BatchLoader(usersById), ordersOf: new BatchLoader(ordersByUser) },
      variableValues: params.variables,
      fieldResolver,
    });
    send(res, 200, result);
  });
});

countingServer(server);
