import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { startTestOutrigger } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { eventually, rawClient, sleep, upstreamSlots } from '../support.js';

const CONNECTIONS = 8;
const PER_CLIENT = 3;
const SEND_TIMEOUT_MS = 1500;
const BUFFER_BOUND = 1024 * 1024;
const BUFFER_PER_CLIENT = 2 * 1024 * 1024;
/** Far more than loopback's socket buffers on both sides: the proxy must wait for the client. */
const BIG_BYTES = 96 * 1024 * 1024;

/**
 * Issue 34 item 1 (and the buffer share of item 9): what a client that never reads can hold.
 * Before: a response the client stopped reading paused its upstream request with no deadline,
 * pipelined requests on one connection each took an upstream slot, and a client was counted by
 * its exact address (an IPv6 subscriber has a whole /64). Now a response that makes no progress
 * for listen.sendTimeoutMs is cut, a connection holds at most one upstream slot at a time, and
 * one address (IPv6: its /64) holds at most upstream.maxConnectionsPerClient slots and
 * upstream.bufferBytesPerClient of the request-buffering memory, however it sends.
 */
describe('clients that never read', () => {
  let redis: TestRedis;
  let upstream: TestServer;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  /** Upstream requests still open, by the client address the proxy reported. */
  const open = new Map<string, number>();
  const sockets = new Set<Socket>();
  const openFrom = (match: (address: string) => boolean) => [...open].reduce((n, [address, count]) => (match(address) ? n + count : n), 0);

  function serve(req: IncomingMessage, res: ServerResponse): void {
    const from = String(req.headers['x-forwarded-for']).split(',').at(-1)!.trim();
    open.set(from, (open.get(from) ?? 0) + 1);
    res.once('close', () => open.set(from, open.get(from)! - 1));
    if (req.url === '/big') {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG_BYTES });
      const pump = () => {
        while (sent < BIG_BYTES && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    req.resume();
    req.on('end', () => res.end('ok'));
  }

  beforeAll(async () => {
    redis = await startTestRedis();
    upstream = await startHttpServer(serve);
    proxy = await startTestOutrigger({
      service: { id: 'unread-responses' },
      upstream: {
        url: upstream.url,
        connections: CONNECTIONS,
        maxConnectionsPerClient: PER_CLIENT,
        maxQueuedPerClient: 64,
        queueTimeoutMs: 30_000,
        // Far longer than the test: only the send timeout may end what the client holds.
        timeoutMs: 120_000,
        bufferBodyBytes: BUFFER_BOUND,
        bufferTotalBytes: 16 * BUFFER_BOUND,
        bufferBytesPerClient: BUFFER_PER_CLIENT,
      },
      listen: { trustedProxies: ['127.0.0.1/32'], sendTimeoutMs: SEND_TIMEOUT_MS, bodyIdleTimeoutMs: 20_000 },
      redis: { url: redis.url },
      acl: { mode: 'own-routes' },
    });
  });
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    // Each row starts with the upstream free again, and nothing held for connections that are gone.
    expect(await eventually(() => openFrom(() => true) === 0, 20_000)).toBe(true);
    expect(await eventually(async () => (await upstreamSlots(proxy.url)).inUse === 0 && (await upstreamSlots(proxy.url)).waiting === 0, 10_000)).toBe(true);
    expect(await eventually(async () => /^outrigger_request_buffer_bytes 0$/m.test(await (await fetch(`${proxy.url}/_metrics`)).text()), 10_000)).toBe(true);
  });
  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
    await redis?.close();
  });

  /** A connection that sends `requests` and never reads a byte of the answers. */
  async function neverReads(requests: string[]): Promise<Socket> {
    const socket = await rawClient(proxy.url, requests.join(''));
    socket.pause();
    sockets.add(socket);
    return socket;
  }
  const get = (path: string, from: string) => `GET ${path} HTTP/1.1\r\nhost: unread\r\nx-forwarded-for: ${from}\r\n\r\n`;

  it('pipelined requests on a connection that never reads hold one upstream slot at a time, and the connection is cut after listen.sendTimeoutMs', async () => {
    await neverReads(Array.from({ length: 8 }, () => get('/big', '127.70.0.1')));
    expect(await eventually(() => openFrom((a) => a === '127.70.0.1') >= 1, 5000)).toBe(true);
    const startedAt = Date.now();
    // Before: all eight (up to the address's share) were sent upstream at once.
    await sleep(500);
    expect(openFrom((a) => a === '127.70.0.1')).toBe(1);
    // Others are served meanwhile.
    expect((await call(proxy.url, '/small', { headers: { 'x-forwarded-for': '127.71.0.1' } })).status).toBe(200);
    // Before: held until the client read or left (upstream.timeoutMs does not run while paused).
    // (The client's socket is paused, so it cannot see the close; the upstream sees its request end.)
    expect(await eventually(() => openFrom((a) => a === '127.70.0.1') === 0, SEND_TIMEOUT_MS + 10_000)).toBe(true);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS - 600);
  });

  it('a connection that leaves with pipelined requests waiting for their turn gives back everything it held', async () => {
    const uploads = Array.from({ length: 3 }, () => `POST /upload HTTP/1.1\r\nhost: unread\r\nx-forwarded-for: 127.74.0.1\r\ncontent-length: 5\r\n\r\nhello`);
    const socket = await neverReads([get('/big', '127.74.0.1'), ...uploads, get('/big', '127.74.0.1')]);
    expect(await eventually(() => openFrom((a) => a === '127.74.0.1') === 1, 5000)).toBe(true);
    socket.destroy();
    // afterEach: no upstream request, slot, waiting request or buffer reservation is left.
  });

  it('connections from many addresses of one IPv6 /64 share one upstream.maxConnectionsPerClient', async () => {
    for (let i = 1; i <= 6; i++) await neverReads([get('/big', `2001:db8:1:2::${i.toString(16)}`)]);
    const fromThe64 = (a: string) => a.startsWith('2001:db8:1:2:');
    expect(await eventually(() => openFrom(fromThe64) >= PER_CLIENT, 5000)).toBe(true);
    await sleep(500);
    // Before: one slot per address, six in all.
    expect(openFrom(fromThe64)).toBeLessThanOrEqual(PER_CLIENT);
    expect((await call(proxy.url, '/small', { headers: { 'x-forwarded-for': '2001:db8:9:9::1' } })).status).toBe(200);
  });

  it('one address reserves at most upstream.bufferBytesPerClient of the request-buffering memory', async () => {
    const bufferBytes = async () => Number(/^outrigger_request_buffer_bytes (\d+)/m.exec(await (await fetch(`${proxy.url}/_metrics`)).text())?.[1] ?? NaN);
    // Eight uploads of ~1 MB each that send their head and nothing more.
    for (let i = 0; i < 8; i++) await neverReads([`POST /upload HTTP/1.1\r\nhost: unread\r\nx-forwarded-for: 127.72.0.1\r\ncontent-length: 1000000\r\n\r\n`]);
    expect(await eventually(async () => (await bufferBytes()) >= 2_000_000, 5000)).toBe(true);
    await sleep(300);
    // Before: all eight reserved (8,000,000 of the 16 MiB total).
    expect(await bufferBytes()).toBeLessThanOrEqual(BUFFER_PER_CLIENT);
    // Another address still has its bodies read before they take a slot.
    await neverReads([`POST /upload HTTP/1.1\r\nhost: unread\r\nx-forwarded-for: 127.73.0.1\r\ncontent-length: 1000000\r\n\r\n`]);
    expect(await eventually(async () => (await bufferBytes()) >= 3_000_000, 5000)).toBe(true);
  });
});
