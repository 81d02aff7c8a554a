// Runs @modelcontextprotocol/conformance against a served Outrigger: the authorization-server
// scenarios (the browser step, sign-in and consent, driven in Chromium), then the server scenarios
// that apply to Outrigger's own MCP server (mcp.server: outrigger, SPEC §11; SERVER_SCENARIOS
// below), through a loopback relay that adds the key an agent received at sign-in (the CLI sends
// no credentials of its own). Needs `npm run build`, a redis-server on PATH, and the conformance
// CLI, which needs Node >= 22 (it imports fs.globSync):
//   node scripts/mcp-conformance.mjs --cli <path to conformance dist/index.js> --node <node 22 binary> [--out dir]
// Prints each scenario's result and writes the CLI's checks under --out (default ./conformance-results).
/* global fetch */
import { spawn } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { hashPassword } from '../dist/src/access/password-hash.js';
import { startOutrigger } from '../dist/src/app.js';
import { validateConfig } from '../dist/src/config/validate.js';
import { createLogger } from '../dist/src/observability/logger.js';
import { startEmbeddedRedis } from '../dist/src/store/embedded-redis.js';
import { startStandinBackend } from '../dist/examples/standin-backend/index.js';

/**
 * The server scenarios that apply: those that need no test tool, resource or prompt of the
 * reference server (`test_simple_text`, `test_image_content`, ...), no sampling, elicitation,
 * logging, progress or completion (Outrigger's server offers tools only, answers once, and asks
 * the client nothing). `server-stateless` (SEP-2575: server/discover, the per-request _meta
 * envelope), `http-header-validation` (SEP-2243: MCP-Protocol-Version, Mcp-Method, Mcp-Name) and
 * `caching` (SEP-2549: ttlMs/cacheScope on list results) are 2026-07-28's, run at that revision.
 */
const SERVER_SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection', 'server-stateless', 'http-header-validation', 'caching'];
/** Checks that need the reference server's diagnostic tools, excused one by one (not whole scenarios). */
const BASELINE = fileURLToPath(new URL('./mcp-conformance-baseline.yml', import.meta.url));
/** Scenarios run at a revision other than the CLI's default. */
const SPEC_VERSION = { 'server-stateless': '2026-07-28', 'http-header-validation': '2026-07-28', caching: '2026-07-28' };

const { values: args } = parseArgs({ options: { cli: { type: 'string' }, node: { type: 'string', default: process.execPath }, out: { type: 'string', default: 'conformance-results' } } });
if (!args.cli) throw new Error('--cli <path to @modelcontextprotocol/conformance dist/index.js> is required');

const freePort = () =>
  new Promise((done) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });

const redis = await startEmbeddedRedis({ dir: mkdtempSync(join(tmpdir(), 'outrigger-conformance-')) });
// The backend the tools read: the stand-in with three orders.
const upstream = await startStandinBackend({ data: { shop: { orders: [1, 2, 3].map((n) => ({ _id: `o${n}`, number: n, status: n === 2 ? 'open' : 'closed' })) } } });
const port = await freePort();
const issuer = `http://127.0.0.1:${port}`;
const { config, problems } = validateConfig({
  service: { id: 'conformance', publicUrl: issuer },
  listen: { host: '127.0.0.1', port },
  upstream: { url: upstream.url },
  mcp: { server: 'outrigger' },
  redis: { url: redis.url },
  users: {
    source: 'static',
    static: [
      { id: 'alice', password: await hashPassword('alice-password'), roles: ['user'] },
      { id: 'root', password: await hashPassword('root-password'), roles: ['root'] },
    ],
  },
  log: { level: 'silent' },
});
if (problems.length) throw new Error(problems.join('\n'));
const outrigger = await startOutrigger(config, { worker: false, logger: createLogger({ level: 'silent' }) });
const asRoot = { authorization: `Basic ${Buffer.from('root:root-password').toString('base64')}`, 'content-type': 'application/json' };
const put = async (path, doc) => {
  const res = await fetch(`${issuer}${path}`, { method: 'PUT', headers: asRoot, body: JSON.stringify(doc) });
  if (res.status >= 300) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
};
await put('/_admin/acl/issue', { predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } });
await put('/_admin/acl/read-shop', { predicate: 'path-prefix(/graphql/shop) or (method(GET) and path-prefix(/shop/orders))', roles: ['reader'], priority: 1 });
await put('/gql-apps/shop', {
  descriptor: { uri: 'shop' },
  schema: 'enum Status { OPEN CLOSED } type Order { number: Int, status: Status } type Query { orders(status: Status, limit: Int = 10): [Order] }',
  mappings: { Status: { OPEN: 'open', CLOSED: 'closed' }, Query: { orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, limit: { $arg: 'limit' } } } },
  mcp: {
    tools: [{ name: 'list_orders', description: 'Orders, by status', query: 'query ListOrders($status: Status, $limit: Int = 10) { orders(status: $status, limit: $limit) { number status } }' }],
  },
});

const callbackPort = await freePort();
const registered = await (
  await fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'MCP conformance', redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`] }),
  })
).json();

const browser = await chromium.launch({ executablePath: process.env.OUTRIGGER_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
const cliArgs = [resolve(args.cli), 'authorization', '--url', issuer, '--client-id', registered.client_id, '--resource', `${issuer}/mcp`, '--port', String(callbackPort), '-o', resolve(args.out)];
const child = spawn(args.node, cliArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
child.stdout.setEncoding('utf8');
child.stdout.on('data', async (chunk) => {
  process.stdout.write(chunk);
  const url = /^(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m.exec(chunk)?.[1];
  if (!url) return;
  const page = await browser.newPage();
  await page.goto(url);
  await page.getByLabel('User id').fill('alice');
  await page.getByLabel('Password').fill('alice-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((u) => u.pathname === '/callback').catch(() => {});
  await page.close();
});
const code = await new Promise((done) => child.on('exit', done));
await browser.close();

// The server scenarios, as an agent that signed in: a key of alice's (role reader), added to every
// request by a loopback relay in front of /mcp.
const issued = await (
  await fetch(`${issuer}/keys`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from('alice:alice-password').toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'conformance', roles: ['reader'] }),
  })
).json();
const relay = createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${issued.key}` };
  delete headers.host;
  const inner = httpRequest(`${issuer}${req.url}`, { method: req.method, headers: { ...headers, host: req.headers.host ?? '' } }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  inner.on('error', () => res.writeHead(502).end());
  req.pipe(inner);
}).listen(0, '127.0.0.1');
await new Promise((done) => relay.once('listening', done));
const serverResults = [];
for (const scenario of SERVER_SCENARIOS) {
  const version = SPEC_VERSION[scenario] ? ['--spec-version', SPEC_VERSION[scenario]] : [];
  const run = spawn(
    args.node,
    [resolve(args.cli), 'server', '--url', `http://127.0.0.1:${relay.address().port}/mcp`, '--scenario', scenario, ...version, '--expected-failures', BASELINE, '-o', resolve(args.out)],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  serverResults.push([scenario, await new Promise((done) => run.on('exit', done))]);
}
console.log(`server scenarios: ${serverResults.map(([s, c]) => `${s} ${c === 0 ? 'passed' : `FAILED (${c})`}`).join(', ')}`);
relay.close();
await outrigger.stop();
await upstream.close();
await redis.stop();
process.exitCode = (code ?? 1) || (serverResults.some(([, c]) => c !== 0) ? 1 : 0);
