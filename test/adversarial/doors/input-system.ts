/**
 * The system the input tests attack: the built CLI (`outrigger start`, worker in-process) in a
 * child process, its own redis-server, a stand-in upstream answering JSON, a webhook target, a
 * GraphQL app and a webhook whose condition reads the body, all on loopback. The door list is
 * read from the running process (its startup log and its admin 404), so `doors.ts` can be
 * checked against what is really served.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { basic, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

export const ROOT = basic('root', 'root-password');
export const ALICE = basic('alice', 'alice-password');
export const APP_URI = 'fuzzshop';

export interface InputSystem {
  cli: RunningCli;
  url: string;
  redis: TestRedis;
  upstream: TestServer;
  target: TestServer & { received: string[] };
  /** Every write the GraphQL app's mutations sent to the backend, as its request target (issue 34: no dot segments). */
  backendWrites: string[];
  /** Route prefixes from the startup log. */
  routes: string[];
  /** Admin areas, as the admin route lists them. */
  adminAreas: string[];
  webhookId: string;
  alive(): boolean;
  close(): Promise<void>;
}

function drain(req: IncomingMessage, done: (body: string) => void) {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => done(Buffer.concat(chunks).toString('utf8')));
  req.on('error', () => done(''));
}

export async function startInputSystem(serviceId: string, extraYaml = ''): Promise<InputSystem> {
  const redis = await startTestRedis();
  const backendWrites: string[] = [];
  const upstream = await startHttpServer((req: IncomingMessage, res: ServerResponse) =>
    drain(req, (body) => {
      // Writes the GraphQL app's mutations make are answered as RESTHeart answers them.
      const bulk = req.url?.split('?')[0]?.endsWith('/*') || body.trimStart().startsWith('[');
      if (req.method !== 'GET' && req.method !== 'HEAD' && req.url?.startsWith('/shop')) backendWrites.push(req.url);
      if (req.url?.startsWith('/shop/') && req.method !== 'GET' && req.method !== 'HEAD') {
        if (bulk) res.writeHead(200, { 'content-type': 'application/json' }).end('{"inserted":1,"links":["/shop/orders/0000000000000000000000aa"],"deleted":1,"modified":1,"matched":1}');
        else if (req.method === 'POST') res.writeHead(201, { location: 'http://upstream/shop/orders/0000000000000000000000aa' }).end();
        else res.writeHead(req.method === 'DELETE' ? 204 : 200).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[]');
    }),
  );
  const received: string[] = [];
  const targetServer = await startHttpServer((req, res) =>
    drain(req, (body) => {
      received.push(body);
      res.end('ok');
    }),
  );
  const target = Object.assign(targetServer, { received });
  const users = await staticUsers({ root: ['root'], alice: ['user'] });
  const config = writeTempFile(
    'outrigger.yaml',
    [
      `service: { id: ${serviceId} }`,
      // Trusted, so a fuzzer can give each request its own client IP (X-Forwarded-For): the
      // brute-force guard's per-IP daily limit would otherwise answer 429 to everything after
      // a hundred bad sign-ins, and the rest of the run would only test that.
      "listen: { host: 127.0.0.1, port: 0, trustedProxies: ['127.0.0.0/8'] }",
      'shutdown: { drainSeconds: 0, timeoutSeconds: 2 }',
      `upstream: { url: ${upstream.url}, timeoutMs: 5000 }`,
      `redis: { url: ${redis.url} }`,
      'acl: { mode: own-routes }',
      'log: { level: info }',
      `users: ${JSON.stringify(users)}`,
      "webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['200ms', '200ms'] }",
      // A by: key policy, so PATCH /_admin/keys/<id> has a policy to override (the fuzzer uses Basic: never limited by it).
      'limits: { policies: [{ name: per-key, by: key, limit: 100000, window: 60s }] }',
      // The response cache (issue 47), so its admin area is a door too.
      'cache: { rules: [{ when: "path-prefix(\'/api\')", maxAgeSeconds: 5 }] }',
      // Outrigger answers /mcp itself (issue 37), so its MCP door is one of its own.
      'mcp: { server: outrigger }',
      extraYaml,
    ].join('\n'),
  );
  const cli = await startCli(config);
  const url = cli.url;
  let exited = false;
  void cli.exited.then(() => (exited = true));

  const started = /"routes":(\[[^\]]*\])/.exec(cli.output());
  const routes = started ? (JSON.parse(started[1]!) as string[]) : [];
  const admin = await send(url, 'GET', '/_admin/__no_such_area__', { authorization: ROOT });
  const adminAreas = [...String(JSON.parse(admin.text).message).matchAll(/\/_admin\/([A-Za-z0-9-]+)/g)].map((m) => m[1]!).filter((a) => a !== '__no_such_area__');

  const app = await send(
    url,
    'POST',
    '/gql-apps',
    { authorization: ROOT, 'content-type': 'application/json' },
    JSON.stringify({
      _id: 'x1',
      descriptor: { name: 'fuzz shop', uri: APP_URI },
      schema:
        'type Order { number: Int, status: String } input OrderIn { number: Int, status: String } input OrderRef { id: ID, status: String } type Query { orders(status: String, limit: Int): [Order] } ' +
        'type Mutation { addOrder(number: Int, status: String): ID setStatus(id: ID!, status: String): Boolean edit(id: ID!, changes: BsonDocument): Boolean ' +
        'bulk(orders: [OrderIn!]): Int purge(filter: BsonDocument): Int remove(id: ID!): Order setByRef(ref: OrderRef!): Boolean }',
      mappings: {
        Query: { orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, limit: { $arg: 'limit' } } },
        Mutation: {
          addOrder: { db: 'shop', collection: 'orders', insert: { number: { $arg: 'number' }, status: { $arg: ['status', 'new'] }, owner: '@user.id' } },
          setStatus: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'id' } }, update: { $set: { status: { $arg: 'status' } } } },
          edit: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'id' } }, update: { $set: { $arg: 'changes' } } },
          bulk: { db: 'shop', collection: 'orders', insert: { $arg: 'orders' } },
          purge: { db: 'shop', collection: 'orders', find: { status: { $arg: 'filter' } }, many: true, delete: true },
          remove: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'id' } }, delete: true },
          setByRef: { db: 'shop', collection: 'orders', find: { _id: { $arg: 'ref.id' } }, update: { $set: { status: { $arg: 'ref.status' } } } },
        },
      },
    }),
  );
  if (app.status !== 201) throw new Error(`the GraphQL app was refused: ${app.status} ${app.text}`);
  const hook = await send(
    url,
    'POST',
    '/_admin/webhooks',
    { authorization: ROOT, 'content-type': 'application/json' },
    JSON.stringify({
      _id: 'x1',
      name: 'every api write',
      type: 'http',
      condition: "path-prefix('/api') and method(POST) and regex(pattern='^/api/[a-z0-9/]*$', value='%R')",
      url: `${target.url}/hook`,
      transform: { template: '{"path": "{{request.path}}", "body": {{{request.body}}}}' },
    }),
  );
  if (hook.status !== 201) throw new Error(`the webhook was refused: ${hook.status} ${hook.text}`);
  // Users may issue keys (so the body of POST /keys is read), and x1 exists for PATCH doors.
  const permission = await send(
    url,
    'POST',
    '/_admin/acl',
    { authorization: ROOT, 'content-type': 'application/json' },
    JSON.stringify({
      _id: 'x1',
      predicate: "path-prefix('/keys')",
      roles: ['user'],
      apiKeys: { roles: ['user'] },
    }),
  );
  if (permission.status !== 201) throw new Error(`the permission was refused: ${permission.status} ${permission.text}`);

  return {
    cli,
    url,
    redis,
    upstream,
    target,
    routes,
    adminAreas,
    backendWrites,
    webhookId: JSON.parse(hook.text)._id as string,
    alive: () => !exited && cli.child.exitCode === null,
    async close() {
      cli.child.kill('SIGTERM');
      await Promise.race([cli.exited, new Promise((r) => setTimeout(r, 5000))]);
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
      await target.close();
      await upstream.close();
      await redis.close();
    },
  };
}

export interface Answer {
  status: number;
  text: string;
  /** The message an error body carries (RESTHeart's `message`, GraphQL's first error, JSON-RPC's `error.message`). */
  message: string;
}

const pools = new Map<string, Pool>();
/** The path is sent byte for byte as given (no URL normalisation), over kept-alive connections. */
function poolFor(base: string): Pool {
  let pool = pools.get(base);
  if (!pool) pools.set(base, (pool = new Pool(base, { connections: 16 })));
  return pool;
}

export async function closePools(): Promise<void> {
  await Promise.all([...pools.values()].map((p) => p.close()));
  pools.clear();
}

/** One request with a deadline; a hang rejects with `timeout`. */
export async function send(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer, timeoutMs = 10_000): Promise<Answer> {
  const res = await poolFor(base).request({
    path,
    method: method as 'GET',
    headers,
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.body.text();
  let message = '';
  try {
    const parsed = JSON.parse(text) as { message?: unknown; error_description?: unknown; errors?: Array<{ message?: unknown }>; error?: { message?: unknown } };
    // JSON-RPC (the /mcp door) carries it in error.message.
    message = String(parsed.message ?? parsed.error_description ?? parsed.errors?.[0]?.message ?? (typeof parsed.error === 'object' ? parsed.error?.message : undefined) ?? '');
  } catch {
    // not JSON: no message
  }
  return { status: res.statusCode, text, message };
}
