/**
 * Issue 53 item 10: Outrigger's own routes have the bounds of the proxied path. Before, an own
 * route's answer (a 9 MB GraphQL answer here) stayed in memory as long as a client that never
 * reads kept its connection (listen.sendTimeoutMs existed only in the forwarder), and own routes'
 * request bodies had no per-address or per-process memory bound (the proxied path reserves
 * upstream.bufferBytesPerClient / bufferTotalBytes). Now both are decided where every own route
 * passes: the handler watches each own route's answer with the send timeout, and http/body.ts
 * reserves each body's bytes as they arrive against the forwarder's reservations.
 */
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { ROOT, useStack } from '../../support/fixtures.js';
import { eventually, rawClient, readUntilClosed, sleep } from '../support.js';

const SEND_TIMEOUT_MS = 1500;
const BUFFER_PER_CLIENT = 2 * 1024 * 1024;
const BUFFER_TOTAL = 12 * 1024 * 1024;
const DOCS = 1000;
/** Each document's padding: the answer is about DOCS × PAD bytes, far more than loopback buffers a paused reader. */
const PAD = 9_000;
/** Clients that never read, side by side. */
const CUT_CLIENTS = 2;
const QUERY = JSON.stringify({ query: '{ docs { n pad } }' });

describe("own routes' answers and bodies are bounded as the proxied path's (issue 53 item 10)", () => {
  const stack = useStack({
    service: 'own-route-bounds',
    backend: { data: { shop: { big: Array.from({ length: DOCS }, (_, n) => ({ _id: `d${n}`, n, pad: 'x'.repeat(PAD) })) } } },
    users: { root: ['root'] },
    config: {
      listen: { trustedProxies: ['127.0.0.1/32'], sendTimeoutMs: SEND_TIMEOUT_MS },
      upstream: { bufferTotalBytes: BUFFER_TOTAL, bufferBytesPerClient: BUFFER_PER_CLIENT },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      graphql: { maxResponseBytes: 64 * 1024 * 1024, maxBackendReads: 10 },
    },
    apps: {
      big: {
        _id: 'big',
        descriptor: { uri: 'big' },
        schema: 'type Doc { n: Int, pad: String } type Query { docs: [Doc] }',
        mappings: { Query: { docs: { db: 'shop', collection: 'big', sort: { n: 1 }, limit: DOCS } } },
      },
    },
  });

  const sockets = new Set<Socket>();
  const bufferBytes = async () => Number(/^outrigger_request_buffer_bytes (\d+)/m.exec(await (await fetch(`${stack.proxy.url}/_metrics`)).text())?.[1] ?? NaN);
  afterEach(async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    // Nothing is held for connections that are gone.
    expect(await eventually(async () => (await bufferBytes()) === 0, 10_000)).toBe(true);
  });

  const post = (from: string, length: number) =>
    `POST /graphql/big HTTP/1.1\r\nhost: bounds\r\nauthorization: ${ROOT}\r\ncontent-type: application/json\r\nx-forwarded-for: ${from}\r\ncontent-length: ${length}\r\n\r\n`;

  /** The answer's full size, read by a client that reads. */
  async function fullAnswerBytes(): Promise<number> {
    const res = await call(stack.proxy.url, '/graphql/big', { method: 'POST', auth: ROOT, body: JSON.parse(QUERY) });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    return Buffer.byteLength(res.text);
  }

  it('an answer the client stops reading is cut after listen.sendTimeoutMs; the client gets only what the kernel buffered', async () => {
    const full = await fullAnswerBytes();
    expect(full).toBeGreaterThan(DOCS * PAD);
    const clients = await Promise.all(
      Array.from({ length: CUT_CLIENTS }, async (_, i) => {
        const socket = await rawClient(stack.proxy.url, post(`127.81.0.${i + 1}`, Buffer.byteLength(QUERY)), QUERY);
        sockets.add(socket);
        // The first bytes say the answer is written (one write: the rest waits in Outrigger); then the client stops reading.
        let first = '';
        socket.once('data', (chunk: Buffer) => {
          first = chunk.toString('latin1');
          socket.pause();
        });
        return { socket, started: () => first };
      }),
    );
    expect(await eventually(() => clients.every((c) => c.started() !== ''), 60_000, 100)).toBe(true);
    // The send timeout, twice over (a loaded machine), from the last answer's first bytes.
    await sleep(2 * SEND_TIMEOUT_MS + 1000);
    const received = await Promise.all(
      clients.map(({ socket }) => {
        const reading = readUntilClosed(socket, 8000);
        socket.resume(); // a 'data' listener alone does not resume a paused socket
        return reading;
      }),
    );
    for (const [i, { text, closed }] of received.entries()) {
      expect(clients[i]!.started()).toMatch(/^HTTP\/1\.1 200/);
      // Before: the whole answer arrived once the client read, and the connection stayed open.
      expect(closed).toBe(true);
      expect(clients[i]!.started().length + Buffer.byteLength(text, 'latin1')).toBeLessThan(full);
    }
  }, 90_000);

  it('a client that reads slowly but keeps reading gets the whole answer', async () => {
    const full = await fullAnswerBytes();
    const socket = await rawClient(stack.proxy.url, post('127.82.0.1', Buffer.byteLength(QUERY)), QUERY);
    sockets.add(socket);
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    // Reads in bursts of 100 ms with pauses of 2/3 of the send timeout: each pause alone is shorter than the timeout.
    const reading = setInterval(
      () => {
        socket.resume();
        setTimeout(() => socket.pause(), 100);
      },
      100 + SEND_TIMEOUT_MS * (2 / 3),
    );
    socket.pause();
    const headLength = 400;
    const done = await eventually(() => bytes >= full + headLength - 200 || socket.destroyed, 45_000, 200);
    clearInterval(reading);
    expect(done).toBe(true);
    expect(socket.destroyed).toBe(false);
  }, 60_000);

  it("one address holds at most upstream.bufferBytesPerClient of own routes' request bodies; past it 429 naming it", async () => {
    const answers: Array<Promise<{ text: string; closed: boolean }>> = [];
    // Eight 1 MB bodies from one address, each sent to 600 KB and then stalled.
    for (let i = 0; i < 8; i++) {
      const socket = await rawClient(stack.proxy.url, post('127.83.0.1', 1_000_000), Buffer.alloc(600_000, 0x20));
      sockets.add(socket);
      answers.push(readUntilClosed(socket, 4000));
    }
    expect(await eventually(async () => (await bufferBytes()) >= 1_500_000, 5000)).toBe(true);
    // Before: no own-route body was counted (0 here) and all eight were held in full.
    expect(await bufferBytes()).toBeLessThanOrEqual(BUFFER_PER_CLIENT);
    // Another address is served meanwhile.
    const other = await call(stack.proxy.url, '/graphql/big', { method: 'POST', auth: ROOT, body: { query: '{ docs { n } }' }, headers: { 'x-forwarded-for': '127.84.0.1' } });
    expect(other.status).toBe(200);
    const settled = await Promise.all(answers);
    const refused = settled.filter((a) => a.text.startsWith('HTTP/1.1 429'));
    expect(refused.length).toBeGreaterThanOrEqual(8 - Math.floor(BUFFER_PER_CLIENT / 600_000) - 1);
    const body = refused[0]!.text.slice(refused[0]!.text.indexOf('\r\n\r\n') + 4);
    // SPEC §15: a refusal on /graphql/<uri> is GraphQL-shaped (it was RESTHeart's before).
    expect(JSON.parse(body)).toEqual({ errors: [{ message: expect.stringMatching(/upstream\.bufferBytesPerClient/), extensions: { code: 'TOO_MANY_REQUESTS', reason: 'TOO_MANY_REQUEST_BODIES' } }] });
    expect(refused[0]!.text).toMatch(/retry-after: 1/i);
  }, 30_000);

  it('all addresses together hold at most upstream.bufferTotalBytes; past it 503 naming it', async () => {
    const answers: Array<Promise<{ text: string; closed: boolean }>> = [];
    for (let i = 0; i < 16; i++) {
      const socket = await rawClient(stack.proxy.url, post(`127.85.0.${i + 1}`, 1_000_000), Buffer.alloc(900_000, 0x20));
      sockets.add(socket);
      answers.push(readUntilClosed(socket, 4000));
    }
    expect(await eventually(async () => (await bufferBytes()) >= 10_000_000, 5000)).toBe(true);
    expect(await bufferBytes()).toBeLessThanOrEqual(BUFFER_TOTAL);
    const settled = await Promise.all(answers);
    const refused = settled.filter((a) => a.text.startsWith('HTTP/1.1 503'));
    expect(refused.length).toBeGreaterThanOrEqual(2);
    const body = refused[0]!.text.slice(refused[0]!.text.indexOf('\r\n\r\n') + 4);
    // SPEC §15: GraphQL-shaped on /graphql/<uri>.
    expect(JSON.parse(body)).toEqual({ errors: [{ message: expect.stringMatching(/upstream\.bufferTotalBytes/), extensions: { code: 'SERVICE_UNAVAILABLE', reason: 'REQUEST_BODIES_FULL' } }] });
  }, 30_000);
});
