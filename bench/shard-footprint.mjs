/* global fetch */
/**
 * What one Redis shard carries for one service (docs/scaling.md): Redis memory per API key,
 * Redis memory and commands per delivered webhook event (the log entry, its indexes, the
 * delivery marker), Redis CPU per event, and end-to-end events/s through one proxy and one
 * in-process worker. One redis-server stands for the shard: on a cluster every key of a service
 * sits in one slot, so its shard sees exactly these commands.
 *
 *   npm run build && node bench/shard-footprint.mjs [keys=1000] [events=3000]
 */
import { createServer } from 'node:http';
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startOutrigger } from '../dist/src/app.js';
import { validateConfig } from '../dist/src/config/validate.js';
import { hashPassword } from '../dist/src/access/password-hash.js';
import { createLogger } from '../dist/src/observability/logger.js';
import { startStandinBackend } from '../dist/examples/standin-backend/index.js';
import { startRedis } from './lib/redis.mjs';

const KEYS = Number(process.argv[2] ?? 1000);
const EVENTS = Number(process.argv[3] ?? 3000);
const workDir = resolve('bench/.work/shard-footprint');
rmSync(workDir, { recursive: true, force: true });
mkdirSync(workDir, { recursive: true });

const redis = await startRedis(workDir);
const backend = await startStandinBackend({ data: { shop: { orders: [] } } });
let delivered = 0;
let firstAt = 0;
let lastAt = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    delivered++;
    lastAt = performance.now();
    firstAt ||= lastAt;
    res.end('ok');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}`;

const { config, problems } = validateConfig({
  service: { id: 'footprint' },
  listen: { host: '127.0.0.1', port: 0 },
  upstream: { url: backend.url },
  redis: { url: redis.url },
  users: {
    source: 'static',
    static: [
      { id: 'root', password: await hashPassword('root-password'), roles: ['root'] },
      { id: 'ann', password: await hashPassword('ann-password'), roles: ['user'] },
    ],
  },
  acl: { mode: 'enforce' },
  apiKeys: { maxKeysPerUser: 1000 },
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
  log: { level: 'silent' },
});
if (problems.length) throw new Error(problems.join('\n'));
const app = await startOutrigger(config, { worker: true, logger: createLogger({ level: 'silent' }) });
const ROOT = `Basic ${Buffer.from('root:root-password').toString('base64')}`;
const ANN = `Basic ${Buffer.from('ann:ann-password').toString('base64')}`;
const send = async (path, init = {}) => {
  const res = await fetch(`${app.url}${path}`, { ...init, headers: { 'content-type': 'application/json', ...init.headers } });
  await res.arrayBuffer();
  return res.status;
};
await send('/_admin/acl/keys', {
  method: 'PUT',
  headers: { authorization: ROOT },
  body: JSON.stringify({ predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } }),
});
await send('/_admin/acl/readers', { method: 'PUT', headers: { authorization: ROOT }, body: JSON.stringify({ predicate: 'path-prefix(/shop)', roles: ['reader'], priority: 1 }) });

const info = async () => {
  const text = await redis.client.info('all');
  const num = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? NaN);
  return { memory: num('used_memory'), commands: num('total_commands_processed'), cpu: num('used_cpu_user') + num('used_cpu_sys'), keys: Number(/^db0:keys=(\d+)/m.exec(text)?.[1] ?? 0) };
};

// 1. API keys: issue and use each once (the record, its hash index, the owner set, last use).
const k0 = await info();
let key = '';
for (let i = 0; i < KEYS; i++) {
  const res = await fetch(`${app.url}/keys`, { method: 'POST', headers: { authorization: ANN, 'content-type': 'application/json' }, body: JSON.stringify({ name: `k${i}`, roles: ['reader'] }) });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`issuing: ${res.status} ${JSON.stringify(body)}`);
  key = body.key;
  await send('/shop/orders', { headers: { authorization: `Bearer ${key}` } });
}
await new Promise((r) => setTimeout(r, 500));
const k1 = await info();

// 2. Webhook events: one matching webhook, EVENTS requests, all delivered by the in-process worker.
await send('/_admin/webhooks', {
  method: 'POST',
  headers: { authorization: ROOT },
  body: JSON.stringify({ _id: 'orders', name: 'orders', type: 'http', condition: "path('/shop/orders') and method(POST)", url: `${receiverUrl}/hook` }),
});
await new Promise((r) => setTimeout(r, 500));
const e0 = await info();
const started = performance.now();
const inflight = new Set();
for (let i = 0; i < EVENTS; i++) {
  const p = send('/shop/orders', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ n: i, note: 'an order of about a hundred bytes of JSON, as a small API might see' }),
  });
  inflight.add(p);
  p.finally(() => inflight.delete(p));
  if (inflight.size >= 32) await Promise.race(inflight);
}
await Promise.all(inflight);
const sentMs = performance.now() - started;
while (delivered < EVENTS && performance.now() - started < 120_000) await new Promise((r) => setTimeout(r, 50));
await new Promise((r) => setTimeout(r, 1500));
const e1 = await info();

// Where the bytes are: MEMORY USAGE of every key, grouped by kind (ids stripped from the names).
const byKind = {};
for (let cursor = '0'; ;) {
  const [next, names] = await redis.client.scan(cursor, 'COUNT', 1000);
  for (const name of names) {
    const kind = name.replace(/^[^}]*\}:/, '').replace(/:[^:]*[0-9a-f]{8,}[^:]*/g, ':<id>');
    const usage = Number(await redis.client.memory('USAGE', name, 'SAMPLES', 0)) || 0;
    byKind[kind] ??= { keys: 0, bytes: 0 };
    byKind[kind].keys++;
    byKind[kind].bytes += usage;
  }
  cursor = next;
  if (cursor === '0') break;
}

const perKey = (k1.memory - k0.memory) / KEYS;
const perEvent = (e1.memory - e0.memory) / EVENTS;
const report = {
  redis: redis.version,
  keys: KEYS,
  bytesPerKey: Math.round(perKey),
  redisKeysPerApiKey: +((k1.keys - k0.keys) / KEYS).toFixed(2),
  events: EVENTS,
  delivered,
  requestsPerSecond: Math.round(EVENTS / (sentMs / 1000)),
  deliveredPerSecond: Math.round(delivered / ((lastAt - firstAt) / 1000)),
  bytesPerDeliveredEvent: Math.round(perEvent),
  redisCommandsPerEvent: +((e1.commands - e0.commands) / EVENTS).toFixed(1),
  redisCpuMicrosPerEvent: Math.round(((e1.cpu - e0.cpu) / EVENTS) * 1e6),
  memoryByKind: byKind,
};
console.log(JSON.stringify(report, null, 2));
await app.stop();
await new Promise((r) => receiver.close(r));
await backend.close();
await redis.stop();
rmSync(workDir, { recursive: true, force: true });
