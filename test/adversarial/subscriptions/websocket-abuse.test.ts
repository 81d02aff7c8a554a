/**
 * Issue 53, item 9 (WebSockets, from the protocol review) and the first half of item 8
 * (anonymous subscribers per /64). Every row sends real frames through the real proxy:
 * - 9a: a socket that never reads cannot grow the process through pongs (its unsent bytes are
 *   checked before each message: 1008), and nothing but `connection_init` is taken before the ack
 *   (4401);
 * - 9b: sockets are bounded per address (/64), per principal and per process (a health probe is
 *   still answered when the process is full), an acknowledged socket with no subscription closes
 *   after `idleSeconds`, refusals are logged as one JSON line without credentials;
 * - 9c: an upgrade from a page of another site is refused 403 (the rule of /mcp);
 * - 9d: an `h2c` (or other) upgrade is served as a plain HTTP/1.1 request, a WebSocket upgrade
 *   of a path that takes none gets a 404 naming where WebSockets are served;
 * - 8: anonymous SSE subscribers of one IPv6 /64 share `maxPerPrincipal`.
 * Floods are bounded (hundreds of messages, small bounds configured) and stop by themselves.
 */
import { connect, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { startOutrigger } from '../../../src/app.js';
import { createLogger } from '../../../src/observability/logger.js';
import { SocketBounds } from '../../../src/graphql/subscribe/ws/socket-bounds.js';
import { call } from '../../support/clients/http-client.js';
import { basic, merge, staticUsers, testConfig, type RawConfig } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until } from '../../support/wait.js';
import { openSubscriptions, putSubscriptionPermissions, subscribed, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');
const CAROL = basic('carol', 'carol-password');

interface Proxy {
  url: string;
  stop(): Promise<void>;
  log(): string;
}

/** A raw graphql-transport-ws socket: every message, the close, or the refused upgrade with its body. */
async function rawWs(base: string, opts: { from?: string; headers?: Record<string, string>; path?: string } = {}) {
  const headers = { ...(opts.from ? { 'x-forwarded-for': opts.from } : {}), ...opts.headers };
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${opts.path ?? '/graphql/subs'}`, 'graphql-transport-ws', { headers });
  const messages: Array<Record<string, unknown>> = [];
  let closed: { code: number; reason: string } | undefined;
  let refused: { status: number; body: string } | undefined;
  ws.on('message', (m) => messages.push(JSON.parse(String(m)) as Record<string, unknown>));
  ws.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
  ws.on('unexpected-response', (_req, res) => {
    let body = '';
    res.on('data', (c: Buffer) => (body += c.toString('utf8')));
    res.on('end', () => {
      refused = { status: res.statusCode ?? 0, body };
      ws.terminate();
    });
  });
  ws.on('error', () => {});
  await until(() => ws.readyState === WebSocket.OPEN || closed !== undefined || refused !== undefined, 'the socket opened or was refused');
  return {
    ws,
    messages,
    get closed() {
      return closed;
    },
    get refused() {
      return refused;
    },
    send: (m: unknown) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
    /** connection_init, then waits for the ack. */
    async init(auth?: string) {
      ws.send(JSON.stringify({ type: 'connection_init', ...(auth ? { payload: { authorization: auth } } : {}) }));
      await until(() => messages.some((m) => m.type === 'connection_ack') || closed !== undefined, 'ack or close');
    },
  };
}

type Raw = Awaited<ReturnType<typeof rawWs>>;

/** `outrigger_graphql_websockets_open` as /_metrics shows it. */
async function openWebSockets(base: string): Promise<number> {
  const text = await (await fetch(`${base}/_metrics`)).text();
  const line = /^outrigger_graphql_websockets_open (\d+)$/m.exec(text);
  if (!line) throw new Error('outrigger_graphql_websockets_open is not in /_metrics');
  return Number(line[1]);
}

/** HTTP/1.1 requests written at once on a raw TCP connection (what curl --http2 sends for http:// URLs), until `answers` status lines came back. */
function rawHttp(base: string, request: string, answers = 1): Promise<{ text: string; statuses: number[] }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    const statuses = () => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, statuses: statuses() });
    };
    const timer = setTimeout(done, 10_000);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (statuses().length >= answers && /\r\n\r\n[^]*$/.test(text)) setTimeout(done, 100);
    });
    socket.on('error', reject);
    socket.on('close', done);
    socket.write(request);
  });
}

describe('WebSocket abuse (issue 53, items 9 and 8)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let users: RawConfig;
  const running: Proxy[] = [];
  const sockets: Raw[] = [];
  const open = async (base: string, opts: Parameters<typeof rawWs>[1] = {}) => {
    const s = await rawWs(base, opts);
    sockets.push(s);
    return s;
  };
  const closeAll = async (base: string) => {
    for (const s of sockets.splice(0)) s.ws.terminate();
    await until(async () => (await openSubscriptions(base)) === 0, 'every subscription released');
  };

  async function start(serviceId: string, over: RawConfig): Promise<Proxy> {
    let text = '';
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const config = testConfig(
      merge(
        {
          service: { id: serviceId },
          listen: { trustedProxies: ['127.0.0.1/32'] },
          upstream: { url: backend.url },
          redis: { url: redis.url },
          users,
          acl: { mode: 'enforce' },
        },
        over,
      ),
    );
    const r = (await startOutrigger(config, { worker: false, logger: createLogger({ level: 'info', destination }) })) as unknown as { url: string; stop(): Promise<void> };
    const proxy = { url: r.url, stop: () => r.stop(), log: () => text };
    running.push(proxy);
    await putSubscriptionPermissions(r.url, ROOT);
    await call(r.url, '/_admin/acl/anonymous-graphql', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/graphql/subs)', roles: ['$unauthenticated'], priority: 1 } });
    expect((await call(r.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
    return proxy;
  }

  let proxy: Proxy;

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    users = await staticUsers({ root: ['root'], carol: ['everything'] });
    proxy = await start('ws-abuse', { subscriptions: { maxPerPrincipal: 4, heartbeatSeconds: 600, webSockets: { maxPerAddress: 6, maxPerPrincipal: 3, maxPerProcess: 10, idleSeconds: 3600 } } });
  }, 60_000);

  afterAll(async () => {
    for (const s of sockets) s.ws.terminate();
    for (const p of running) await p.stop().catch(() => {});
    await backend?.close();
    await redis?.close();
  });

  it('9a: before connection_ack only connection_init is taken: a ping closes the socket with 4401 and gets no pong', async () => {
    const early = await open(proxy.url, { from: '2001:db8:a1::1' });
    early.send({ type: 'ping', payload: { n: 1 } });
    await until(() => early.closed !== undefined, 'closed');
    expect(early.closed!.code).toBe(4401);
    expect(early.closed!.reason).toMatch(/only connection_init is accepted before connection_ack/);
    expect(early.messages).toEqual([]);
    const pong = await open(proxy.url, { from: '2001:db8:a1::1' });
    pong.send({ type: 'pong' });
    await until(() => pong.closed !== undefined, 'closed');
    expect(pong.closed!.code).toBe(4401);
    await closeAll(proxy.url);
  });

  it("9a: a refused socket that keeps sending and never reads its close is cut within seconds, not after ws' 30 s", async () => {
    const rude = await open(proxy.url, { from: '2001:db8:a3::1' });
    const socket = (rude.ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    rude.send({ type: 'ping' });
    const started = Date.now();
    while (!socket.destroyed && Date.now() - started < 10_000) {
      if (socket.writable) rude.send({ type: 'ping', payload: { pad: 'x'.repeat(1024) } });
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(socket.destroyed).toBe(true);
    expect(Date.now() - started).toBeLessThan(8000);
    await closeAll(proxy.url);
  }, 30_000);

  it('9a: a socket that sends pings and never reads is closed once 1 MiB waits unsent; its pongs stop there', async () => {
    const stuck = await open(proxy.url, { from: '2001:db8:a2::1' });
    await stuck.init();
    expect(stuck.messages[0]?.type).toBe('connection_ack');
    const socket = (stuck.ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    // 300 pings of 64 KiB (19 MiB of pongs): without the check every pong waits in the process.
    const payload = { pad: 'x'.repeat(64 * 1024) };
    const pings = 300;
    for (let i = 0; i < pings; i++) {
      stuck.send({ type: 'ping', payload });
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 20));
    }
    await until(() => proxy.log().includes('"reason":"unread"'), 'the cut logged', 10_000);
    socket.resume();
    await until(() => stuck.closed !== undefined, 'the socket closed by the server', 15_000);
    const pongs = stuck.messages.filter((m) => m.type === 'pong').length;
    expect(pongs).toBeLessThan(pings);
    expect([1008, 1006]).toContain(stuck.closed!.code);
    const line = proxy
      .log()
      .split('\n')
      .find((l) => l.includes('"reason":"unread"'))!;
    expect(JSON.parse(line)).toMatchObject({ event: 'websocket-refused', address: '2001:db8:a2::/64' });
    await closeAll(proxy.url);
  }, 60_000);

  it('9b: one /64 holds at most maxPerAddress sockets (429 naming the setting); another /64 is not held back', async () => {
    for (let i = 1; i <= 6; i++) {
      const s = await open(proxy.url, { from: `2001:db8:b1::${i}` });
      await s.init();
      expect(s.messages[0]?.type).toBe('connection_ack');
    }
    const seventh = await open(proxy.url, { from: '2001:db8:b1::ffff' });
    expect(seventh.refused?.status).toBe(429);
    expect(seventh.refused?.body).toContain('subscriptions.webSockets.maxPerAddress');
    const elsewhere = await open(proxy.url, { from: '2001:db8:b2::1' });
    expect(elsewhere.ws.readyState).toBe(WebSocket.OPEN);
    // One JSON line, the address as its /64, no credentials.
    const line = proxy
      .log()
      .split('\n')
      .find((l) => l.includes('"reason":"maxPerAddress"'))!;
    expect(JSON.parse(line)).toMatchObject({ event: 'websocket-refused', address: '2001:db8:b1::/64' });
    // A closed socket frees its place.
    sockets.find((s) => s.ws.readyState === WebSocket.OPEN)!.ws.close();
    await until(async () => (await open(proxy.url, { from: '2001:db8:b1::77' })).ws.readyState === WebSocket.OPEN, 'a place freed');
    await closeAll(proxy.url);
  });

  it('9b: one principal holds at most maxPerPrincipal sockets: 429 at the upgrade, 4429 after connection_init', async () => {
    for (let i = 1; i <= 3; i++) {
      const s = await open(proxy.url, { from: `2001:db8:c${i}::1`, headers: { authorization: CAROL } });
      await s.init();
      expect(s.messages[0]?.type).toBe('connection_ack');
    }
    const header = await open(proxy.url, { from: '2001:db8:c4::1', headers: { authorization: CAROL } });
    expect(header.refused?.status).toBe(429);
    expect(header.refused?.body).toContain('subscriptions.webSockets.maxPerPrincipal');
    const init = await open(proxy.url, { from: '2001:db8:c5::1' });
    await init.init(CAROL);
    expect(init.closed?.code).toBe(4429);
    expect(init.closed?.reason).toContain('maxPerPrincipal');
    expect(proxy.log()).not.toContain(CAROL.slice('Basic '.length));
    await closeAll(proxy.url);
  });

  it('9b: the process holds at most maxPerProcess sockets (503); a health probe is still answered', async () => {
    for (let i = 1; i <= 10; i++) {
      const s = await open(proxy.url, { from: `2001:db8:d${i}::1` });
      expect(s.ws.readyState).toBe(WebSocket.OPEN);
    }
    const full = await open(proxy.url, { from: '2001:db8:d99::1' });
    expect(full.refused?.status).toBe(503);
    expect(full.refused?.body).toContain('subscriptions.webSockets.maxPerProcess');
    expect((await fetch(`${proxy.url}/_health/live`)).status).toBe(200);
    // The operator sees how full the process is: the gauge counts sockets, with a subscription or not.
    expect(await openWebSockets(proxy.url)).toBe(10);
    // The bound stays below half the open-file limit, so descriptors remain for probes, Redis and the backend.
    expect(new SocketBounds({ maxPerAddress: 10, maxPerPrincipal: 10, maxPerProcess: 5000, idleSeconds: 60 }, 1024).maxPerProcess).toBe(512);
    await closeAll(proxy.url);
    await until(async () => (await openWebSockets(proxy.url)) === 0, 'the gauge back to 0 once the sockets closed');
  });

  it('9b: an acknowledged socket with no subscription closes after idleSeconds; one with a subscription stays', async () => {
    const idle = await start('ws-abuse-idle', { subscriptions: { webSockets: { idleSeconds: 1 } } });
    const quiet = await rawWs(idle.url);
    await quiet.init(CAROL);
    const busy = await rawWs(idle.url);
    await busy.init(CAROL);
    busy.send({ type: 'subscribe', id: '1', payload: { query: 'subscription { orderChanged { op } }' } });
    await subscribed(idle.url, 1);
    await until(() => quiet.closed !== undefined, 'the idle socket closed', 10_000);
    expect(quiet.closed!.code).toBe(1000);
    expect(quiet.closed!.reason).toContain('subscriptions.webSockets.idleSeconds');
    expect(busy.closed).toBeUndefined();
    busy.ws.terminate();
    await idle.stop();
  }, 30_000);

  it('9c: an upgrade from a page of another site is refused 403; its own origin, loopback pages and non-browsers are not', async () => {
    const evil = await open(proxy.url, { from: '2001:db8:e1::1', headers: { origin: 'https://evil.example', authorization: CAROL } });
    expect(evil.refused?.status).toBe(403);
    expect(evil.refused?.body).toContain('https://evil.example');
    const local = await open(proxy.url, { from: '2001:db8:e1::2', headers: { origin: 'http://localhost:5173' } });
    expect(local.ws.readyState).toBe(WebSocket.OPEN);
    const none = await open(proxy.url, { from: '2001:db8:e1::3' });
    expect(none.ws.readyState).toBe(WebSocket.OPEN);
    expect(proxy.log()).toContain('"reason":"origin"');
    await closeAll(proxy.url);
  });

  it('9d: an h2c upgrade is served as HTTP/1.1 (body and keep-alive included); a WebSocket nobody takes gets 404', async () => {
    const h2c = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n';
    const body = JSON.stringify({ number: 1, status: 'h2c' });
    const { statuses } = await rawHttp(
      proxy.url,
      `GET /_health/live HTTP/1.1\r\nHost: x\r\n${h2c}\r\n` +
        `POST /shop/orders HTTP/1.1\r\nHost: x\r\nAuthorization: ${CAROL}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${h2c}\r\n${body}`,
      2,
    );
    expect(statuses).toEqual([200, 201]);
    const other = await rawHttp(proxy.url, 'GET /_health/live HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: made-up/1\r\n\r\n');
    expect(other.statuses).toEqual([200]);
    const nowhere = await rawWs(proxy.url, { path: '/shop/orders' });
    expect(nowhere.refused?.status).toBe(404);
    expect(nowhere.refused?.body).toContain('/graphql/<app>');
    expect(proxy.log()).toContain('"reason":"no-websocket-here"');
  });

  it('8: anonymous SSE subscribers of one IPv6 /64 share maxPerPrincipal; another /64 has its own', async () => {
    const sse = (from: string) =>
      fetch(`${proxy.url}/graphql/subs`, {
        method: 'POST',
        headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'x-forwarded-for': from },
        body: JSON.stringify({ query: 'subscription { orderChanged { op } }' }),
      });
    const held = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => sse(`2001:db8:f1::${i}`)));
    expect(held.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429, 429]);
    const elsewhere = await sse('2001:db8:f2::1');
    expect(elsewhere.status).toBe(200);
    for (const r of [...held, elsewhere]) await r.body?.cancel().catch(() => {});
    await until(async () => (await openSubscriptions(proxy.url)) === 0, 'every subscription released');
  });
});
