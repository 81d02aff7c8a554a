/**
 * The backend misbehaves (for docs/reliability.md): it resets the connection, answers bytes that
 * are not HTTP, never answers, cuts its body short, or drips it slowly. Each is answered in the error format (502,
 * 504) or, once the head is out, by a broken connection (never a truncated body that looks
 * whole), and the proxy keeps serving with every upstream slot given back.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/clients/http-client.js';
import { startTestOutrigger } from '../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../support/redis/redis.js';
import { eventually, upstreamSlots } from '../adversarial/support.js';

const TIMEOUT_MS = 1000;

describe('chaos: the backend resets, hangs, answers garbage, cuts its body', () => {
  let redis: TestRedis;
  let backend: Server;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        const path = /^[A-Z]+ (\S+)/.exec(head)?.[1] ?? '/';
        head = '';
        if (path === '/reset') socket.resetAndDestroy();
        else if (path === '/garbage') socket.end('THIS IS NOT HTTP\r\n\r\n');
        else if (path === '/hang') return;
        else if (path === '/cut') {
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000\r\n\r\n0123456789');
          setTimeout(() => socket.destroy(), 50);
        } else if (path === '/drip') {
          // 20 bytes, one every 100 ms: a response that trickles but never stalls.
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 20\r\n\r\n');
          let sent = 0;
          const timer = setInterval(() => {
            if (socket.destroyed) return clearInterval(timer);
            socket.write(String(sent % 10));
            if (++sent === 20) clearInterval(timer);
          }, 100);
        } else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    const port = (backend.address() as { port: number }).port;
    proxy = await startTestOutrigger({
      service: { id: 'chaos-backend' },
      upstream: { url: `http://127.0.0.1:${port}`, timeoutMs: TIMEOUT_MS },
      redis: { url: redis.url },
      acl: { mode: 'own-routes' },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await proxy?.stop();
    await new Promise((resolve) => backend?.close(resolve));
    await redis?.close();
  });

  it('a reset connection is 502 in the error format', async () => {
    const res = await call(proxy.url, '/reset');
    expect(res.status).toBe(502);
    expect(res.json).toMatchObject({ 'http status code': 502, message: expect.stringMatching(/upstream could not be reached/) });
  });

  it('an answer that is not HTTP is 502 in the error format', async () => {
    const res = await call(proxy.url, '/garbage');
    expect(res.status).toBe(502);
    expect(res.json).toMatchObject({ 'http status code': 502 });
  });

  it('a backend that never answers is 504 after upstream.timeoutMs', async () => {
    const startedAt = Date.now();
    const res = await call(proxy.url, '/hang');
    expect(res.status).toBe(504);
    expect(res.json).toMatchObject({ message: expect.stringMatching(/upstream\.timeoutMs/) });
    // SPEC: a backend slower than upstream.timeoutMs is answered 504; not before the timeout, and
    // near it: the margin is one a loaded machine cannot eat (issue 40), far below a hang.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(Date.now() - startedAt).toBeLessThan(TIMEOUT_MS + 5000);
  });

  it('a body cut short after the head is a broken connection for the client, never a short complete answer', async () => {
    const outcome = await new Promise<{ status: number; bytes: number; complete: boolean; error: string | null }>((resolve) => {
      const req = request(`${proxy.url}/cut`, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode!, bytes, complete: res.complete, error: null }));
        res.on('error', (e) => resolve({ status: res.statusCode!, bytes, complete: res.complete, error: e.message }));
        res.on('aborted', () => resolve({ status: res.statusCode!, bytes, complete: false, error: 'aborted' }));
      });
      req.on('error', (e) => resolve({ status: 0, bytes: 0, complete: false, error: e.message }));
      req.end();
    });
    expect(outcome.status).toBe(200);
    expect(outcome.complete).toBe(false);
    expect(outcome.bytes).toBeLessThan(1000);
  });

  it('a response that drips slowly streams through whole, and does not hold up other requests', async () => {
    const started = Date.now();
    let dripped = false;
    const drip = call(proxy.url, '/drip').finally(() => (dripped = true));
    // While it drips (2 s), another request is answered: before the drip ends, which a request
    // held up behind it could not be (an order, not a time bound, so a loaded machine that
    // stretches both does not fail it; issue 40).
    expect((await call(proxy.url, '/fine')).status).toBe(200);
    expect(dripped, 'the drip ended before /fine was answered').toBe(false);
    const res = await drip;
    expect(res.status).toBe(200);
    expect(res.text).toBe('01234567890123456789');
    // Each byte's gap (100 ms) is below upstream.timeoutMs: the whole answer takes longer than the timeout and is still complete.
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS);
  });

  it('keeps serving afterwards, every upstream slot given back', async () => {
    expect((await call(proxy.url, '/fine')).status).toBe(200);
    expect(await eventually(async () => (await upstreamSlots(proxy.url)).inUse === 0, 3000)).toBe(true);
  });
});
