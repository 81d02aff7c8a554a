import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/util/free-port.js';
import { call } from '../../support/clients/http-client.js';

const DEMO = resolve(import.meta.dirname, '../../../dist/examples/demo/main.js');
const README = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');

/** Runs the built demo in `cwd` until it exits or prints that it runs (then stops it). */
function runDemo(env: NodeJS.ProcessEnv, cwd: string, args: string[] = [], onRunning?: (stdout: string, live: () => string) => Promise<void>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, reject) => {
    const child = spawn(process.execPath, [DEMO, ...args], { cwd, env: { ...process.env, OUTRIGGER_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let running = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!running && stdout.includes('Ctrl-C stops the demo')) {
        running = true;
        void (onRunning ?? (async () => {}))(stdout, () => stdout).then(
          () => child.kill('SIGTERM'),
          (error: unknown) => {
            child.kill('SIGKILL');
            reject(error);
          },
        );
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

describe('npm run demo (built)', () => {
  let blocker: Server;
  let takenPort: number;

  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    takenPort = (blocker.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => blocker.close(() => r())));

  it('runs, and the GraphQL curl it prints (the README shows the same) answers with the demo data', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    let answer: any;
    const result = await runDemo(env, cwd, [], async (stdout) => {
      const line = stdout.split('\n').find((l) => l.includes('curl') && l.includes('/graphql/shop'));
      const match = /-u (\w+):(\S+) (http:\/\/\S+\/graphql\/shop) .*-d '([^']+)'/.exec(line ?? '');
      expect(match, `no GraphQL curl in:\n${stdout}`).not.toBeNull();
      const [, user, password, url, body] = match!;
      expect(README).toContain(body!);
      const res = await call(url!, '', { method: 'POST', auth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, body: body! });
      answer = { status: res.status, json: res.json };
      // The two pages a newcomer opens in a browser, as printed: the console and GraphiQL.
      const consoleUrl = /^\s+(http:\/\/\S+\/_admin\/)\s+the console/m.exec(stdout)?.[1];
      const graphiqlUrl = /^\s+(http:\/\/\S+\/graphql\/shop)\s+GraphiQL/m.exec(stdout)?.[1];
      expect(consoleUrl, `no console address in:\n${stdout}`).toBeDefined();
      expect(graphiqlUrl, `no GraphiQL address in:\n${stdout}`).toBeDefined();
      const consolePage = await fetch(consoleUrl!);
      expect(consolePage.status).toBe(200);
      expect(await consolePage.text()).toMatch(/<html/i);
      const graphiql = await fetch(graphiqlUrl!, { headers: { accept: 'text/html', authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` } });
      expect(graphiql.status).toBe(200);
      expect(await graphiql.text()).toMatch(/graphiql/i);
    });
    expect(result.code).toBe(0);
    expect(answer.status).toBe(200);
    // alice sees her own orders only (her readFilter applies to GraphQL reads), with her user joined.
    expect(answer.json.data.orders.length).toBeGreaterThan(0);
    for (const order of answer.json.data.orders) expect(order.user).toEqual({ name: 'Alice Rossi', city: 'Rome' });
  }, 90_000);

  it('the GraphQL mutation curl it prints (the README shows the same) creates an order as alice, and the demo prints the webhook it fired', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    let answer: any;
    let delivered = '';
    const result = await runDemo(env, cwd, [], async (stdout, live) => {
      const line = stdout.split('\n').find((l) => l.includes('curl') && l.includes('/graphql/shop') && l.includes('mutation'));
      const match = /-u (\w+):(\S+) (http:\/\/\S+\/graphql\/shop) .*-d '([^']+)'/.exec(line ?? '');
      expect(match, `no GraphQL mutation curl in:\n${stdout}`).not.toBeNull();
      const [, user, password, url, body] = match!;
      expect(README).toContain(body!);
      const res = await call(url!, '', { method: 'POST', auth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, body: body! });
      answer = { status: res.status, json: res.json };
      const until = Date.now() + 15_000;
      while (!live().includes('webhook "new orders" delivered') && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      delivered =
        live()
          .split('\n')
          .find((l) => l.startsWith('webhook "new orders" delivered')) ?? '';
    });
    expect(result.code).toBe(0);
    expect(answer.status).toBe(200);
    expect(answer.json.data.createOrder).toMatchObject({ status: 'pending', total: 24.5, user: { name: 'Alice Rossi' } });
    expect(delivered).toBe('webhook "new orders" delivered: POST /restheart/orders (via GraphQL app shop, operation anonymous)');
  }, 90_000);

  it('the cache curls it prints (the README shows the same) say fwd=miss;stored, then hit: a REST read and a whole GraphQL answer', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    const statuses: string[] = [];
    const answers: string[] = [];
    const result = await runDemo(env, cwd, [], async (stdout) => {
      // The whole GraphQL answer (the app's descriptor.cache), twice, then once more after the printed mutation.
      const gqlLine = stdout.split('\n').find((l) => l.includes('/graphql/shop') && l.includes("'^cache-status'"));
      const gqlMatch = /-u (\w+):(\S+) (http:\/\/\S+\/graphql\/shop) .*-d '([^']+)'/.exec(gqlLine ?? '');
      expect(gqlMatch, `no GraphQL cache curl in:\n${stdout}`).not.toBeNull();
      const mutationLine = stdout.split('\n').find((l) => l.includes('/graphql/shop') && l.includes('createOrder'));
      const mutation = /-d '([^']+)'/.exec(mutationLine ?? '')?.[1];
      expect(mutation, `no mutation curl in:\n${stdout}`).toBeDefined();
      expect(README).toContain(`-d '${gqlMatch![4]!}' | grep -i '^cache-status'`);
      const [, gqlUser, gqlPassword, gqlUrl, body] = gqlMatch!;
      const gqlAuth = `Basic ${Buffer.from(`${gqlUser}:${gqlPassword}`).toString('base64')}`;
      const ask = async () => {
        const res = await call(gqlUrl!, '', { method: 'POST', auth: gqlAuth, body: body! });
        expect(res.status).toBe(200);
        answers.push(String(res.headers['cache-status']));
      };
      await ask();
      await ask();
      expect((await call(gqlUrl!, '', { method: 'POST', auth: gqlAuth, body: mutation! })).json.errors).toBeUndefined();
      await ask();
      const line = stdout.split('\n').find((l) => l.includes('curl') && l.includes("/restheart/orders | grep -i '^cache-status'"));
      const match = /-u (\w+):(\S+) (http:\/\/\S+\/restheart\/orders)/.exec(line ?? '');
      expect(match, `no cache curl in:\n${stdout}`).not.toBeNull();
      expect(README).toContain("/restheart/orders | grep -i '^cache-status'");
      const [, user, password, url] = match!;
      for (let i = 0; i < 2; i++) {
        const res = await call(url!, '', { auth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
        expect(res.status).toBe(200);
        statuses.push(String(res.headers['cache-status']));
      }
    });
    expect(result.code).toBe(0);
    expect(statuses[0]).toBe('Outrigger;fwd=miss;stored');
    expect(statuses[1]).toMatch(/^Outrigger;hit;ttl=\d+$/);
    expect(answers[0]).toBe('Outrigger;fwd=miss;stored');
    expect(answers[1]).toMatch(/^Outrigger;hit;ttl=\d+$/);
    // The mutation wrote an order: the answer was dropped.
    expect(answers[2]).toBe('Outrigger;fwd=miss;stored');
  }, 90_000);

  it('the subscription curl it prints (curl -N, SSE) receives the order the mutation curl creates', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    let streamed = '';
    const result = await runDemo(env, cwd, [], async (stdout) => {
      const line = stdout.split('\n').find((l) => l.includes('curl -N') && l.includes('text/event-stream'));
      const match = /-u (\w+:\S+) (http:\/\/\S+\/graphql\/shop) .*-d '([^']+)'/.exec(line ?? '');
      expect(match, `no subscription curl in:\n${stdout}`).not.toBeNull();
      const [, credentials, url, body] = match!;
      expect(README).toContain(body!);
      const curl = spawn('curl', ['-N', '-s', '-u', credentials!, url!, '-H', 'accept: text/event-stream', '-H', 'content-type: application/json', '-d', body!]);
      curl.stdout.on('data', (chunk: Buffer) => (streamed += chunk.toString()));
      try {
        const mutationLine = stdout.split('\n').find((l) => l.includes('curl') && l.includes('mutation'));
        const mutation = /-d '([^']+)'/.exec(mutationLine ?? '')![1]!;
        // The subscription is registered before curl sees the first comment (":"): then the order is placed.
        const deadline = Date.now() + 15_000;
        while (!streamed.startsWith(':') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        const [user, password] = credentials!.split(':');
        const res = await call(url!, '', { method: 'POST', auth: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`, body: mutation });
        expect(res.status).toBe(200);
        while (!streamed.includes('"op":"insert"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      } finally {
        curl.kill();
      }
    });
    expect(result.code).toBe(0);
    expect(streamed).toMatch(/^id: \d+-\d+$/m);
    expect(streamed).toContain('"orderChanged":{"op":"insert"');
    expect(streamed).toContain('"user":{"name":"Alice Rossi"}');
  }, 90_000);

  it('prints its log lines for a person (time, level, message), not the JSON lines of outrigger start, and stops at once on Ctrl-C', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_LOG_LEVEL: 'info', OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    const { code, stdout } = await runDemo(env, cwd);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\d\d:\d\d:\d\d INFO {2}Outrigger listening on http:\/\/127\.0\.0\.1:\d+, proxying to http:\/\/127\.0\.0\.1:\d+; .*webhook worker on$/m);
    expect(stdout).toMatch(/^\d\d:\d\d:\d\d INFO {2}received SIGTERM: /m);
    expect(stdout).toMatch(/^\d\d:\d\d:\d\d INFO {2}Outrigger stopped$/m);
    expect(stdout.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
    // The demo does not drain (no load balancer in front of it): no drain line.
    expect(stdout).not.toContain('draining:');
  }, 90_000);

  it('a taken port: the CLI message naming the port, and OUTRIGGER_DEMO_PORT; no stack trace', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const { code, stderr } = await runDemo({ OUTRIGGER_DEMO_PORT: String(takenPort), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) }, cwd);
    expect(code).toBe(1);
    expect(stderr).toContain(`listen.port: 127.0.0.1:${takenPort} is already in use`);
    expect(stderr).toMatch(/OUTRIGGER_DEMO_PORT=\d+ npm run demo/);
    expect(stderr).not.toMatch(/\n\s+at /);

    const backend = await runDemo({ OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(takenPort) }, cwd);
    expect(backend.code).toBe(1);
    expect(backend.stderr).toMatch(/OUTRIGGER_DEMO_BACKEND_PORT=\d+ npm run demo/);
    expect(backend.stderr).not.toMatch(/\n\s+at /);
  }, 90_000);

  it('redis-server missing: the CLI message with the install hint; no stack trace', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const empty = mkdtempSync(join(tmpdir(), 'outrigger-empty-path-'));
    const { code, stderr } = await runDemo({ PATH: empty, OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) }, cwd);
    expect(code).toBe(1);
    expect(stderr).toMatch(/redis-server could not be run \(ENOENT\)\. Install it \(Debian\/Ubuntu: apt-get install redis-server/);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  it('--reset deletes what the demo stored', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const dir = join(cwd, '.outrigger', 'demo-redis');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'appendonly.aof'), 'stored keys');
    // A taken port makes the demo stop right after the reset.
    const { stdout } = await runDemo({ OUTRIGGER_DEMO_PORT: String(takenPort), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) }, cwd, ['--reset']);
    expect(stdout).toContain(`reset: deleted ${dir}`);
    expect(existsSync(dir)).toBe(false);
  }, 60_000);

  it("prints a curl showing a key's RateLimit headers (SPEC §10), which the demo's per-key policy sends", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'outrigger-demo-'));
    const env = { OUTRIGGER_DEMO_PORT: String(await freePort()), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    let headers: Record<string, unknown> = {};
    const result = await runDemo(env, cwd, [], async (stdout) => {
      const line = stdout.split('\n').find((l) => l.includes('curl') && l.includes('^ratelimit'));
      const url = /Bearer <the key>" (http:\/\/\S+)/.exec(line ?? '')?.[1];
      expect(url, `no RateLimit curl in:\n${stdout}`).toBeDefined();
      const base = new URL(url!).origin;
      const issued = await call(base, '/keys', { method: 'POST', auth: `Basic ${Buffer.from('alice:alice-password').toString('base64')}`, body: { name: 'demo-limits', roles: ['reader'] } });
      expect(issued.status, issued.text).toBe(201);
      const res = await call(url!, '', { auth: `Bearer ${issued.json.key}` });
      expect(res.status).toBe(200);
      headers = res.headers;
    });
    expect(result.code).toBe(0);
    expect(headers['ratelimit-policy']).toBe('"per-key";q=60;w=60');
    expect(headers['ratelimit']).toMatch(/^"per-key";r=59;t=\d+$/);
  }, 90_000);
});
