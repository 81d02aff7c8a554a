/**
 * The floor under both GraphQL servers (issue 39): what any server answering the bench's two
 * queries must do, and nothing else. node:http, the request body parsed, the same backend reads
 * as Outrigger and the hand-written server (same paths, filters, sort and page size, through an
 * undici Pool), each answer parsed with JSON.parse, the result built by hand for the one known
 * shape, and one JSON.stringify. No GraphQL at all: no parse, no validation, no execution, no
 * authentication, no ACL. Its CPU per query is the part both servers pay (Node's HTTP server,
 * the undici client, JSON in and out), so the hand-written server's CPU ÷ this one's is the
 * highest "hand-written ÷ Outrigger" ratio any server could reach on this machine.
 * Usage: BACKEND=http://127.0.0.1:PORT node graphql-floor.mjs
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { countingServer } from './ipc.mjs';

const backend = new Pool(process.env.BACKEND, { connections: 64 });

async function readCollection(path) {
  const res = await backend.request({ method: 'GET', path, headers: { accept: 'application/json' } });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`backend answered ${res.statusCode} to ${path}`);
  }
  return res.body.json();
}

/** Distinct values of `key` in the order first seen (the order the loaders send them). */
function distinct(docs, key) {
  const seen = new Set();
  for (const d of docs) seen.add(d[key]);
  return [...seen];
}

const inFilter = (field, ids) => encodeURIComponent(JSON.stringify({ [field]: { $in: ids } }));

async function flat() {
  const orders = await readCollection(`/restheart/orders?sort=${encodeURIComponent('{"number":1}')}&page=1&pagesize=100`);
  const users = await readCollection(`/restheart/users?filter=${inFilter('_id', distinct(orders, 'userId'))}&sort=${encodeURIComponent('{"_id":1}')}&page=1&pagesize=1000`);
  const byId = new Map(users.map((u) => [u._id, u]));
  return {
    orders: orders.map((o) => {
      const u = byId.get(o.userId);
      return { number: o.number, total: o.total, status: o.status, user: u ? { id: u._id, name: u.name, city: u.city } : null };
    }),
  };
}

async function nested() {
  const orders = await readCollection(`/restheart/orders?sort=${encodeURIComponent('{"number":1}')}&page=1&pagesize=100`);
  const users = await readCollection(`/restheart/users?filter=${inFilter('_id', distinct(orders, 'userId'))}&sort=${encodeURIComponent('{"_id":1}')}&page=1&pagesize=1000`);
  const byId = new Map(users.map((u) => [u._id, u]));
  const ids = distinct(
    orders.map((o) => byId.get(o.userId)).filter((u) => u && 'city' in u),
    '_id',
  );
  const theirs = await readCollection(`/restheart/orders?filter=${inFilter('userId', ids)}&sort=${encodeURIComponent('{"number":-1}')}&page=1&pagesize=1000`);
  const ordersOf = new Map(ids.map((id) => [id, []]));
  for (const o of theirs) ordersOf.get(o.userId)?.push(o);
  const buyer = (u) => {
    if (!u) return null;
    if (!('city' in u)) return { __typename: 'Guest', id: u._id };
    const recentOrders = ordersOf
      .get(u._id)
      .slice(0, 3)
      .map((o) => ({ number: o.number, total: o.total, status: o.status }));
    return { __typename: 'User', id: u._id, name: u.name, city: u.city, recentOrders };
  };
  return { orders: orders.map((o) => ({ number: o.number, total: o.total, status: o.status, buyer: buyer(byId.get(o.userId)) })) };
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
    try {
      const data = String(params.query ?? '').includes('buyer') ? await nested() : await flat();
      send(res, 200, { data });
    } catch (error) {
      send(res, 502, { errors: [{ message: String(error) }] });
    }
  });
});

countingServer(server);
