/**
 * Request buffering in the forwarder (upstream.bufferBodyBytes), on the path the handler takes
 * when an observer (webhooks, recording) taps the body: the body arrives as an async iterable,
 * not the request itself. Small bodies are read whole before a slot is taken; a chunked body past
 * the bound streams on with what was read first; the observer sees every chunk once.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Forwarder } from '../../../src/proxy/forwarder.js';
import { startHttpServer, type TestServer } from '../../support/peers/http-servers.js';
import { ADAPTIVE_DEFAULTS, BREAKER_DEFAULTS } from '../../../src/config/upstream-protection.js';

const BOUND = 64 * 1024;

describe('request buffering through an observed body', () => {
  let upstream: TestServer;
  let front: Server;
  let forwarder: Forwarder;
  let url: string;
  const seenByObserver: number[] = [];
  const slotsAtDispatch: number[] = [];

  beforeAll(async () => {
    upstream = await startHttpServer((req, res) => {
      slotsAtDispatch.push(forwarder.slots.activeCount);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        res.end(JSON.stringify({ bytes: body.length, sum: checksum(body), cl: req.headers['content-length'] ?? null, te: req.headers['transfer-encoding'] ?? null }));
      });
    });
    forwarder = new Forwarder({
      upstream: {
        url: upstream.url,
        timeoutMs: 5000,
        connections: 4,
        maxConnectionsPerClient: 4,
        queueTimeoutMs: 2000,
        maxQueuedPerClient: 8,
        bufferBodyBytes: BOUND,
        bufferTotalBytes: Infinity,
        bufferBytesPerClient: Infinity,
        adaptiveConcurrency: { ...ADAPTIVE_DEFAULTS, enabled: false },
        breaker: { ...BREAKER_DEFAULTS, enabled: false },
      },
      listen: { bodyIdleTimeoutMs: 2000, sendTimeoutMs: 60_000 },
    });
    front = createServer((req, res) => {
      let seen = 0;
      async function* tapped(source: IncomingMessage): AsyncIterable<Buffer> {
        for await (const chunk of source as AsyncIterable<Buffer>) {
          seen += chunk.length;
          yield chunk;
        }
      }
      res.once('close', () => seenByObserver.push(seen));
      forwarder.forward({ req, res, method: req.method!, target: req.url!, requestId: 'r', clientIp: '127.0.0.1', peerTrusted: false, secure: false, body: tapped(req) }, (error) => {
        res.writeHead(error.status).end(error.message);
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => front?.close(resolve));
    await forwarder?.close();
    await upstream?.close();
  });

  function post(parts: Buffer[], chunked: boolean): Promise<{ bytes: number; sum: number; cl: string | null; te: string | null }> {
    const total = parts.reduce((n, p) => n + p.length, 0);
    return new Promise((resolve, reject) => {
      const req = request(`${url}/up`, { method: 'POST', headers: chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(total) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      });
      req.on('error', reject);
      (async () => {
        for (const part of parts) {
          req.write(part);
          await new Promise((r) => setTimeout(r, 5));
        }
        req.end();
      })();
    });
  }

  it('sends a small body whole, with its length, after reading it (chunked or not)', async () => {
    const parts = [Buffer.from('abc'), Buffer.from('defgh'), Buffer.alloc(1000, 7)];
    const expected = checksum(Buffer.concat(parts));
    expect(await post(parts, false)).toEqual({ bytes: 1008, sum: expected, cl: '1008', te: null });
    expect(await post(parts, true)).toEqual({ bytes: 1008, sum: expected, cl: '1008', te: null });
    expect(seenByObserver.slice(-2)).toEqual([1008, 1008]);
  });

  it('streams a chunked body past the bound on, what was read first included, every byte once', async () => {
    const parts = Array.from({ length: 10 }, (_, i) => Buffer.alloc(20 * 1024, i + 1));
    const body = Buffer.concat(parts);
    expect(await post(parts, true)).toEqual({ bytes: body.length, sum: checksum(body), cl: null, te: 'chunked' });
    expect(seenByObserver.at(-1)).toBe(body.length);
  });

  it('leaves every slot free between requests', () => {
    expect(forwarder.slots.activeCount).toBe(0);
    expect(slotsAtDispatch.every((n) => n >= 1)).toBe(true);
  });
});

describe('request buffering stays under upstream.bufferTotalBytes', () => {
  let upstream: TestServer;
  let front: Server;
  let forwarder: Forwarder;
  let port = 0;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    upstream = await startHttpServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    forwarder = new Forwarder({
      upstream: {
        url: upstream.url,
        timeoutMs: 5000,
        connections: 4,
        maxConnectionsPerClient: 4,
        queueTimeoutMs: 2000,
        maxQueuedPerClient: 8,
        bufferBodyBytes: BOUND,
        bufferTotalBytes: 2 * 60_000,
        bufferBytesPerClient: Infinity,
        adaptiveConcurrency: { ...ADAPTIVE_DEFAULTS, enabled: false },
        breaker: { ...BREAKER_DEFAULTS, enabled: false },
      },
      listen: { bodyIdleTimeoutMs: 5000, sendTimeoutMs: 60_000 },
    });
    front = createServer((req, res) => {
      const cancel = forwarder.forward({ req, res, method: req.method!, target: req.url!, requestId: 'r', clientIp: '127.0.0.1', peerTrusted: false, secure: false }, (error) => {
        res.writeHead(error.status).end(error.message);
      });
      res.once('close', () => {
        if (!res.writableFinished) cancel();
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    port = (front.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => front?.close(resolve));
    await forwarder?.close();
    await upstream?.close();
  });

  it('buffers while the reservations fit, streams the next body, and gives every reservation back', async () => {
    for (let i = 0; i < 3; i++) {
      const socket = connect({ port, host: '127.0.0.1' });
      socket.on('error', () => {});
      socket.write('POST /up HTTP/1.1\r\nhost: x\r\ncontent-length: 60000\r\n\r\nabc');
      sockets.push(socket);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Two bodies reserved 60,000 bytes each; the third did not fit and streams, holding a slot.
    expect(forwarder.bufferedBytes).toBe(120_000);
    expect(forwarder.slots.activeCount).toBe(1);
    for (const socket of sockets) socket.destroy();
    const until = Date.now() + 2000;
    while ((forwarder.bufferedBytes > 0 || forwarder.slots.activeCount > 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(forwarder.bufferedBytes).toBe(0);
    expect(forwarder.slots.activeCount).toBe(0);
  });
});

function checksum(buffer: Buffer): number {
  let sum = 0;
  for (let i = 0; i < buffer.length; i++) sum = (sum * 31 + buffer[i]!) >>> 0;
  return sum;
}
