/**
 * SPEC §14's bad input at the GraphQL and MCP doors: an `Idempotency-Key` on a mutation that is
 * empty, too long, holds control or non-ASCII bytes, comes twice or is a broken quoted string is a
 * GraphQL-shaped 400 naming the header, and nothing runs; the same header on a query is ignored,
 * whatever it holds; an MCP `idempotencyKey` of the wrong type or shape is an invalid argument
 * (nothing runs), and a query tool has no such argument. Where `idempotency.required` matches
 * (carol on /graphql/shop), a mutation in any form without the header is 400
 * IDEMPOTENCY_KEY_REQUIRED, a bad header stays IDEMPOTENCY_KEY_INVALID, and what is not a
 * mutation (a query picked from a mixed document, a document that does not parse, a GET) gets
 * the answer it got before, never a 500.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { call } from '../../support/clients/http-client.js';
import { ADD_PRODUCT as ADD, idempotentShopStack, mcpClient } from '../../integration/mcp/mcp-helpers.js';
import { rawClient, readUntilClosed } from '../support.js';

const ALICE = as('alice');
const CAROL = as('carol');

describe('Idempotency-Key at the GraphQL and MCP doors under bad input (SPEC §14)', () => {
  const stack = useStack(idempotentShopStack('idem-gql-adv'));
  let client: Client | undefined;
  beforeEach(() => stack.backend.clearRequests());
  afterAll(async () => void (await client?.close().catch(() => {})));
  const writes = () => stack.backend.requests.filter((r) => r.method === 'POST').length;
  const send = (key: string, query = ADD, variables: Record<string, unknown> = { name: 'oar', price: 1 }) =>
    call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: ALICE, headers: { 'idempotency-key': key }, body: { query, variables } });

  it('a bad key on a mutation: 400 naming Idempotency-Key, GraphQL-shaped, nothing runs', async () => {
    const rows = ['', '""', 'x'.repeat(256), `"${'x'.repeat(256)}"`, '"unclosed', '"a\\b"', '"a" trailing', 'a,b', 'a b', '"tab\there"', 'semi;colon'];
    for (const key of rows) {
      const res = await send(key);
      expect(res.status, `${JSON.stringify(key)}: ${res.text}`).toBe(400);
      expect(res.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
      expect(Object.keys(res.json)).toEqual(['errors']);
      expect(res.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_INVALID');
      expect(res.json.errors[0].message, key).toMatch(/Idempotency-Key/);
    }
    expect(writes()).toBe(0);
  });

  it('bytes a client library would not send: non-ASCII, two header lines; a control byte is refused by the parser', async () => {
    const body = JSON.stringify({ query: ADD, variables: { name: 'oar', price: 1 } });
    const raw = async (headers: string) => {
      const head = `POST /graphql/shop HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: ${ALICE}\r\ncontent-type: application/json\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
      const socket = await rawClient(stack.proxy.url, '');
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]));
      return (await readUntilClosed(socket, 3000)).text;
    };
    for (const headers of ['idempotency-key: caf\u00e9\r\n', 'idempotency-key: "caf\u00e9"\r\n', 'idempotency-key: one\r\nidempotency-key: two\r\n']) {
      const text = await raw(headers);
      expect(text, JSON.stringify(headers)).toMatch(/^HTTP\/1\.1 400 /);
      expect(text).toMatch(/IDEMPOTENCY_KEY_INVALID/);
      expect(text).toMatch(/Idempotency-Key/);
    }
    // A control byte never reaches Outrigger's code: node's parser answers 400 itself.
    expect(await raw('idempotency-key: a\u0001b\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(writes()).toBe(0);
  });

  it('the header on a query is ignored, whatever it holds', async () => {
    for (const key of ['', 'x'.repeat(300), '"unclosed', 'good-key']) {
      const res = await send(key, '{ orders(limit: 1) { number } }', {});
      expect(res.status, res.text).toBe(200);
      expect(res.json.data.orders).toHaveLength(1);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    }
  });

  it('the longest key, spaces inside quotes and escapes are keys like any other', async () => {
    for (const key of ['k'.repeat(255), '"a key with spaces"', '"quote \\" and backslash \\\\"']) {
      const first = await send(key, ADD, { name: `oar ${key.length}`, price: 1 });
      expect(first.status, first.text).toBe(200);
      expect(first.json.errors, first.text).toBeUndefined();
      const again = await send(key, ADD, { name: `oar ${key.length}`, price: 1 });
      expect(again.headers['idempotent-replayed'], key).toBe('true');
    }
    expect(writes()).toBe(3);
  });

  it('MCP: an idempotencyKey of the wrong type or shape is an invalid argument, and nothing runs', async () => {
    client = await mcpClient(stack.proxy.url, ALICE);
    const rows: Array<[unknown, RegExp]> = [
      [5, /idempotencyKey must be a string \(got 5\)/],
      [{ key: 'k' }, /idempotencyKey must be a string \(got an object\)/],
      [null, /idempotencyKey must be a string \(got null\)/],
      ['', /idempotencyKey must match/],
      ['x'.repeat(256), /idempotencyKey must match/],
      [' padded ', /idempotencyKey must match/],
      ['caf\u00e9', /idempotencyKey must match/],
      ['line\nbreak', /idempotencyKey must match/],
    ];
    for (const [key, message] of rows) {
      const result = await client.callTool({ name: 'add_product', arguments: { name: 'oar', idempotencyKey: key } });
      expect(result.isError, JSON.stringify(key)).toBe(true);
      expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(message);
    }
    expect(writes()).toBe(0);
  });

  it('MCP: a query tool has no idempotencyKey argument', async () => {
    client ??= await mcpClient(stack.proxy.url, ALICE);
    const result = await client.callTool({ name: 'list_orders', arguments: { idempotencyKey: 'k' } });
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/idempotencyKey is not an argument of this tool/);
  });

  it('idempotency.required: a mutation in any form without the header is 400 IDEMPOTENCY_KEY_REQUIRED; a bad header stays INVALID; nothing runs', async () => {
    const bare = (body: Record<string, unknown>, headers: Record<string, string> = {}) => call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: CAROL, headers, body });
    const mixed = `query Few { orders(limit: 1) { number } } ${ADD}`;
    const rows: Array<[string, Record<string, unknown>]> = [
      ['a plain mutation', { query: ADD, variables: { name: 'oar', price: 1 } }],
      ['the mutation picked from a mixed document', { query: mixed, operationName: 'AddProduct', variables: { name: 'oar' } }],
      ['an anonymous mutation', { query: 'mutation { addProduct(name: "oar") }' }],
      ['a mutation with bad variables', { query: ADD, variables: { name: 5 } }],
    ];
    for (const [what, body] of rows) {
      const res = await bare(body);
      expect(res.status, `${what}: ${res.text}`).toBe(400);
      expect(Object.keys(res.json), what).toEqual(['errors']);
      expect(res.json.errors[0].extensions.code, what).toBe('IDEMPOTENCY_KEY_REQUIRED');
      expect(res.json.errors[0].message, what).toMatch(/Idempotency-Key header \(idempotency\.required\)/);
    }
    // A header that is there but bad is named as such, not as missing.
    const empty = await bare({ query: ADD, variables: { name: 'oar' } }, { 'idempotency-key': '' });
    expect(empty.json.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_INVALID');
    expect(writes()).toBe(0);
  });

  it('idempotency.required: what is not a mutation gets the answer it got before, never a 500', async () => {
    const mixed = `query Few { orders(limit: 1) { number } } ${ADD}`;
    const query = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: CAROL, body: { query: mixed, operationName: 'Few' } });
    expect(query.status, query.text).toBe(200);
    expect(query.json.data.orders).toHaveLength(1);
    const broken = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: CAROL, body: { query: 'mutation { addProduct(' } });
    expect(broken.json.errors[0].extensions.code, broken.text).toBe('GRAPHQL_PARSE_FAILED');
    const noOperation = await call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: CAROL, body: { query: mixed } });
    expect(noOperation.status, noOperation.text).toBeLessThan(500);
    expect(noOperation.json.errors[0].extensions.code).not.toMatch(/IDEMPOTENCY/);
    const viaGet = await call(stack.proxy.url, `/graphql/shop?query=${encodeURIComponent(ADD)}&variables=${encodeURIComponent('{"name":"oar"}')}`, { auth: CAROL });
    expect(viaGet.status, viaGet.text).toBeGreaterThanOrEqual(400);
    expect(viaGet.status).toBeLessThan(500);
    expect(viaGet.text).not.toMatch(/IDEMPOTENCY/);
    expect(writes()).toBe(0);
  });

  it('idempotency.required for MCP: an idempotencyKey of the wrong shape is still an invalid argument; without one the call is refused naming it', async () => {
    const carol = await mcpClient(stack.proxy.url, CAROL);
    try {
      for (const key of [null, '', 7]) {
        const result = await carol.callTool({ name: 'add_product', arguments: { name: 'oar', idempotencyKey: key } });
        expect(result.isError, JSON.stringify(key)).toBe(true);
        expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/invalid arguments for add_product: .*idempotencyKey/);
      }
      const without = await carol.callTool({ name: 'add_product', arguments: { name: 'oar' } });
      expect((without.content as Array<{ text: string }>)[0]!.text).toMatch(/^IDEMPOTENCY_KEY_REQUIRED: add_product must be called with an idempotencyKey argument/);
      expect(writes()).toBe(0);
    } finally {
      await carol.close().catch(() => {});
    }
  });
});
