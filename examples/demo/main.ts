/**
 * `npm run demo`: the stand-in RESTHeart backend, Outrigger in front of it with an embedded
 * redis-server, and a few curl commands to try. Ctrl-C stops everything.
 * `npm run demo -- --reset` first deletes what the demo stored (keys, webhooks, changes).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOutrigger } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import type { OutriggerConfig } from '../../src/config/types.js';
import { stopOnSignals } from '../../src/cli/commands/start.js';
import { ListenError } from '../../src/http/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { readableLogDestination } from './readable-log.js';
import { demoData, demoUsers } from '../standin-backend/demo-data.js';
import { startStandinBackend } from '../standin-backend/index.js';

const port = Number(process.env.OUTRIGGER_DEMO_PORT ?? 8080);
const backendPort = Number(process.env.OUTRIGGER_DEMO_BACKEND_PORT ?? 8081);
// Resolved from the source tree, so it is found whether this runs from dist/ or not.
const configFile = resolve(dirname(fileURLToPath(import.meta.url)), '../../../examples/demo/outrigger.yaml');
const redisDir = join(process.cwd(), '.outrigger', 'demo-redis');
// Fresh at every start, shared by the backend and the config (upstream.identity.jwt.secret reads it).
const jwtSecret = randomBytes(32).toString('base64url');
process.env.OUTRIGGER_DEMO_JWT_SECRET = jwtSecret;

/** The CLI's own messages, plus the demo's variable to change; never a stack trace. */
function exitWith(error: unknown, variable: string, suggestion: number): never {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`outrigger demo: ${message}\n`);
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' || (error instanceof ListenError && error.code === 'EADDRINUSE')) {
    process.stderr.write(`  the demo takes this port from ${variable}; try: ${variable}=${suggestion} npm run demo\n`);
  }
  process.exit(1);
}

if (process.argv.includes('--reset')) {
  rmSync(redisDir, { recursive: true, force: true });
  process.stdout.write(`reset: deleted ${redisDir} (API keys, webhooks, logs and admin changes); the backend's data is rebuilt at every start\n`);
}

const backend = await startStandinBackend({ port: backendPort, data: demoData, users: demoUsers, jwt: { secret: jwtSecret, issuer: 'restheart.org' } }).catch((error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code;
  const taken = Object.assign(new Error(`the stand-in backend's port 127.0.0.1:${backendPort} is already in use`), { code });
  exitWith(code === 'EADDRINUSE' ? taken : error, 'OUTRIGGER_DEMO_BACKEND_PORT', backendPort + 10);
});
let config: OutriggerConfig;
try {
  config = loadConfig(configFile).config;
} catch (error) {
  exitWith(error, 'OUTRIGGER_DEMO_PORT', port + 10);
}
// An integer key cannot take a ${VAR}: the demo's port variable is applied here.
config.listen.port = port;
// Lines for a person (`12:04:31 INFO  message`); `outrigger start` keeps JSON lines for collectors.
const logger = createLogger({ level: config.log.level, destination: readableLogDestination() });
const outrigger = await startOutrigger(config, { embeddedRedisDir: redisDir, logger }).catch(async (error: unknown) => {
  await backend.close();
  exitWith(error, 'OUTRIGGER_DEMO_PORT', port + 10);
});

const u = outrigger.url;

// A webhook target of the demo's own: it prints what the demo's webhook "new orders" delivers
// (fired by a REST POST /restheart/orders and by the GraphQL mutation createOrder alike).
const hooks = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    res.end('ok');
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { method?: string; path?: string; via?: string; graphql?: { app: string; operation: string | null } } };
      const r = event.request ?? {};
      const via = r.via === 'graphql' ? ` (via GraphQL app ${r.graphql?.app}, operation ${r.graphql?.operation ?? 'anonymous'})` : '';
      process.stdout.write(`webhook "new orders" delivered: ${r.method} ${r.path}${via}\n`);
    } catch {
      process.stdout.write('webhook "new orders" delivered (a body that is not JSON)\n');
    }
  });
});
await new Promise<void>((done) => hooks.listen(0, '127.0.0.1', done));
const hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/new-orders`;
const admin = `Basic ${Buffer.from('admin:admin-password').toString('base64')}`;
const webhook = await fetch(`${u}/_admin/webhooks/demo-new-orders`, {
  method: 'PUT',
  headers: { authorization: admin, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'new orders', type: 'http', condition: "path-prefix('/restheart/orders') and method(POST)", url: hookUrl }),
}).catch((error: unknown) => error as Error);
if (webhook instanceof Error || !webhook.ok) {
  process.stderr.write(`outrigger demo: the webhook "new orders" could not be saved (${webhook instanceof Error ? webhook.message : webhook.status}); the rest of the demo runs without it\n`);
}

const query = `'{"query":"{ orders(limit: 3) { status total user { name city } } }"}'`;
const mutation = `'{"query":"mutation { createOrder(total: 24.5, items: [{productId: \\"p-espresso\\", qty: 1}]) { _id status total user { name } } }"}'`;
const subscription = `'{"query":"subscription { orderChanged { op id order { status total user { name } } } }"}'`;
// The handlers before the banner: a Ctrl-C (or a test's SIGTERM) sent as soon as the banner shows
// must find them installed, not Node's default, which ends the process without stopping Redis.
stopOnSignals(async () => {
  hooks.close();
  await outrigger.stop();
  await backend.close();
}, logger);
process.stdout.write(`
Outrigger demo is running.
  Outrigger (call this):      ${u}
  stand-in RESTHeart backend: ${backend.url}   (users alice, bob, carol, admin; password <id>-password)

Open in a browser:
  ${u}/_admin/                 the console: keys, webhooks and their logs, permissions, recording (sign in as admin / admin-password)
  ${u}/graphql/shop            GraphiQL on the demo's GraphQL app "shop" (paste an API key, or sign in as alice / alice-password)
  MCP server for agents:      ${config.service.publicUrl}/mcp   (tools recent_orders, place_order; an MCP client signs in
                               through the browser: npx @modelcontextprotocol/inspector, "Streamable HTTP", that URL)

Try:
  curl -s -u alice:alice-password ${u}/restheart/orders              # only alice's orders (readFilter)
  curl -s -u carol:carol-password ${u}/restheart/orders              # an auditor: every order, without items
  curl -s ${u}/restheart/orders                                      # 401: sign in first
  curl -s -u alice:alice-password ${u}/graphql/shop -H 'content-type: application/json' -d ${query}
                                                                     # GraphQL: alice's orders with their user joined
  curl -s -u alice:alice-password ${u}/graphql/shop -H 'content-type: application/json' -d ${mutation}
                                                                     # GraphQL mutation: POST /restheart/orders as alice; the webhook
                                                                     # "new orders" fires (printed here, logged at ${u}/_admin/ → Webhooks)
  curl -N -u alice:alice-password ${u}/graphql/shop -H 'accept: text/event-stream' -H 'content-type: application/json' -d ${subscription}
                                                                     # GraphQL subscription over SSE: leave it running, send the mutation
                                                                     # above from another terminal, and the new order arrives here
  curl -s -u alice:alice-password -X POST ${u}/keys -H 'content-type: application/json' -d '{"name":"laptop","roles":["reader"]}'
  curl -s -H "Authorization: Bearer <the key printed above>" ${u}/restheart/orders
  curl -s -o /dev/null -D - -H "Authorization: Bearer <the key>" ${u}/restheart/orders | grep -i '^ratelimit'
                                                                     # the key's rate limit (60 a minute): RateLimit-Policy and
                                                                     # RateLimit ("per-key";r=<left>;t=<seconds to reset>); 429 past it
  curl -s -o /dev/null -D - -u alice:alice-password ${u}/restheart/orders | grep -i '^cache-status'
                                                                     # the response cache: run it twice; the first says fwd=miss;stored,
                                                                     # the second hit (answered from memory until a write to the orders)
  curl -s -o /dev/null -D - -u alice:alice-password ${u}/graphql/shop -H 'content-type: application/json' -d ${query} | grep -i '^cache-status'
                                                                     # a whole GraphQL answer (the app's descriptor.cache): the same,
                                                                     # fwd=miss;stored then hit, until the mutation above writes an order
  curl -s -u admin:admin-password ${u}/_admin/acl                    # the permissions applied from examples/demo/setup.yaml
  curl -s ${u}/_health/ready ; curl -s ${u}/_metrics | head

Ctrl-C stops the demo. \`npm run demo -- --reset\` starts again from empty storage (keys, webhooks, changes).
`);
