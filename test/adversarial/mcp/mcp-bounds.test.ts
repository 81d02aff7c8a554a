/**
 * Issue 53 item 3: one `POST /mcp` held twenty times the GraphQL answer bound. A JSON-RPC batch of
 * 10 tool calls ran at once, each result held twice (text and structuredContent), and nothing
 * bounded the whole answer: one request took a process from 132 MB to 2 GB and held
 * `/_health/live` for 5 s. Now the results of one answer are bounded together
 * (`mcp.maxResponseBytes`, by default `graphql.maxResponseBytes`), a batch's calls run one at a
 * time within what the earlier ones left (a result that does not fit is an error naming the bound,
 * the calls after it are not run), and a large result is held once (as text).
 *
 * Here the GraphQL bound is 4 MiB and each call's answer ~3 MB: the batch of ten would answer
 * ~60 MB. The row measures the answer's size, the process's resident memory (this process runs
 * Outrigger and the stand-in backend) and `/_health/live` while the batch is answered.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';

const BOUND = 4 * 1024 * 1024;
const NOTE = 30_000;

const bigApp = {
  descriptor: { uri: 'big' },
  schema: 'type Order { number: Int, note: String } type Query { orders(limit: Int = 100): [Order] }',
  mappings: { Query: { orders: { db: 'shop', collection: 'orders', sort: { number: 1 }, limit: { $arg: 'limit' } } } },
  mcp: { tools: [{ name: 'big_orders', description: 'Orders with their long notes', query: 'query Big($limit: Int = 100) { orders(limit: $limit) { number note } }' }] },
};

describe('one POST /mcp is bounded as a whole (issue 53 item 3)', () => {
  const stack = useStack({
    service: 'mcp-bounds',
    // 100 orders of ~30 KB each: one call's answer is ~3 MB, under the 4 MiB GraphQL bound.
    backend: { data: { shop: { orders: Array.from({ length: 100 }, (_, i) => ({ _id: i + 1, number: i + 1, note: String(i % 10).repeat(NOTE) })) } } },
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, mcp: { server: 'outrigger' }, graphql: { maxResponseBytes: BOUND, maxLimit: 1000 } },
    permissions: {
      graphql: { predicate: 'path-prefix(/graphql/big)', roles: ['user'], priority: 1 },
      orders: { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 1 },
    },
    apps: { big: bigApp },
  });

  const post = async (body: unknown) => {
    const res = await request(`${stack.proxy.url}/mcp`, {
      method: 'POST',
      headers: { authorization: as('alice'), 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify(body),
    });
    const bytes = Buffer.from(await res.body.arrayBuffer());
    return { status: res.statusCode, bytes: bytes.length, json: JSON.parse(bytes.toString('utf8')) as any };
  };

  it('a batch of 10 calls of ~3 MB each: the answer stays within the 4 MiB bound, the second call is an error naming it, the rest are not run; memory and /_health/live hold', async () => {
    // A first call, so what the process allocates for one is in the baseline.
    await post({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'big_orders', arguments: { limit: 1 } } });
    stack.backend.clearRequests();
    // Probe liveness every 20 ms and sample memory every 10 ms while the batch is answered.
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    let probing = true;
    let slowestProbe = 0;
    const probes = (async () => {
      while (probing) {
        const started = performance.now();
        const res = await request(`${stack.proxy.url}/_health/live`);
        await res.body.text();
        expect(res.statusCode).toBe(200);
        slowestProbe = Math.max(slowestProbe, performance.now() - started);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const batch = Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'big_orders', arguments: {} } }));
    let answer: Awaited<ReturnType<typeof post>>;
    try {
      answer = await post(batch);
    } finally {
      probing = false;
      await probes;
      clearInterval(sampler);
    }
    const grew = peak - baseline;
    console.log(`mcp batch: answer ${answer.bytes} bytes (bound ${BOUND}), RSS +${(grew / 1048576).toFixed(1)} MiB, slowest /_health/live ${slowestProbe.toFixed(0)} ms`);

    expect(answer.status).toBe(200);
    // The whole answer: the results within the bound, plus ten small envelopes.
    expect(answer.bytes).toBeLessThanOrEqual(BOUND + 4096);
    const results = (answer.json as Array<{ id: number; result: { isError?: boolean; content: Array<{ text: string }> } }>).sort((a, b) => a.id - b.id).map((m) => m.result);
    expect(results).toHaveLength(10);
    expect(results[0]!.isError).toBeFalsy();
    expect(results[1]!.isError).toBe(true);
    expect(results[1]!.content[0]!.text).toMatch(
      /^the result of big_orders was not sent: its GraphQL answer is larger than the \d+ bytes left of this request's answer bound \(mcp\.maxResponseBytes, 4194304 bytes for all results of one POST \/mcp\)/,
    );
    for (const later of results.slice(2)) {
      expect(later.isError).toBe(true);
      expect(later.content[0]!.text).toMatch(/^big_orders was not run: the result of big_orders in this request did not fit its answer bound \(mcp\.maxResponseBytes, 4194304 bytes/);
    }
    // Run one at a time and stopped: two reads reached the backend, not ten.
    expect(stack.backend.requests.filter((r) => r.method === 'GET' && r.path === '/shop/orders')).toHaveLength(2);
    // Bounded memory: a multiple of the bound well below what the batch took before the fix
    // (+463 MiB, ~115 times the bound). The in-process stand-in's own 3 MB answers count too, and
    // Node 24 grows its heap in larger steps (+102 MiB seen on 24.22 against +5..42 MiB on 20).
    expect(grew).toBeLessThan(48 * BOUND);
    expect(slowestProbe).toBeLessThan(2000);
  });

  it('a large result is held once: its JSON text alone (the serialization GraphQL made), not also structuredContent; a small one has both', async () => {
    const large = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'big_orders', arguments: {} } });
    expect(large.status).toBe(200);
    expect(large.json.result.isError, JSON.stringify(large.json.result).slice(0, 300)).toBeFalsy();
    expect(large.json.result.structuredContent).toBeUndefined();
    expect(JSON.parse(large.json.result.content[0].text).orders).toHaveLength(100);
    expect(large.bytes).toBeLessThan(BOUND);
    const small = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'big_orders', arguments: { limit: 1 } } });
    expect(small.json.result.structuredContent).toEqual({ orders: [{ number: 1, note: '0'.repeat(NOTE) }] });
    expect(JSON.parse(small.json.result.content[0].text)).toEqual(small.json.result.structuredContent);
  });
});
