// Runs the authorization-server scenarios of @modelcontextprotocol/conformance against a served
// Outrigger and drives the browser step (sign-in and consent) in Chromium. Needs `npm run build`,
// a redis-server on PATH, and the conformance CLI, which needs Node >= 22 (it imports fs.globSync):
//   node scripts/mcp-conformance.mjs --cli <path to conformance dist/index.js> --node <node 22 binary> [--out dir]
// Prints each scenario's result and writes the CLI's checks under --out (default ./conformance-results).
/* global fetch */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { hashPassword } from '../dist/src/access/password-hash.js';
import { startOutrigger } from '../dist/src/app.js';
import { validateConfig } from '../dist/src/config/validate.js';
import { createLogger } from '../dist/src/observability/logger.js';
import { startEmbeddedRedis } from '../dist/src/store/embedded-redis.js';

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
const upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}')).listen(0, '127.0.0.1');
await new Promise((done) => upstream.once('listening', done));
const port = await freePort();
const issuer = `http://127.0.0.1:${port}`;
const { config, problems } = validateConfig({
  service: { id: 'conformance', publicUrl: issuer },
  listen: { host: '127.0.0.1', port },
  upstream: { url: `http://127.0.0.1:${upstream.address().port}` },
  redis: { url: redis.url },
  users: { source: 'static', static: [{ id: 'alice', password: await hashPassword('alice-password'), roles: ['user'] }, { id: 'root', password: await hashPassword('root-password'), roles: ['root'] }] },
  log: { level: 'silent' },
});
if (problems.length) throw new Error(problems.join('\n'));
const outrigger = await startOutrigger(config, { worker: false, logger: createLogger({ level: 'silent' }) });
await fetch(`${issuer}/_admin/acl/issue`, {
  method: 'PUT',
  headers: { authorization: `Basic ${Buffer.from('root:root-password').toString('base64')}`, 'content-type': 'application/json' },
  body: JSON.stringify({ predicate: 'path-prefix(/keys)', roles: ['user'], priority: 1, apiKeys: { roles: ['reader'] } }),
});

const callbackPort = await freePort();
const registered = await (
  await fetch(`${issuer}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'MCP conformance', redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`] }) })
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
await outrigger.stop();
upstream.close();
await redis.stop();
process.exitCode = code ?? 1;
