/**
 * Issue 53 item 8 (second half): a GraphQL query sent with `Accept: application/json,
 * text/event-stream` (what MCP-style clients and some GraphQL clients send for every request) was
 * sent to the SSE transport, which serves subscriptions only, and answered 400. Now Accept is
 * negotiated with its q-values: SSE when the operation is a subscription or text/event-stream is
 * preferred; a query or mutation otherwise answers JSON.
 */
import { describe, expect, it } from 'vitest';
import { streamChoice } from '../../../src/graphql/serve/transport.js';
import { as, useStack } from '../../support/fixtures.js';
import { putSubscriptionPermissions, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const CAROL = as('carol');
const MIXED = 'application/json, text/event-stream';
const SUBSCRIPTION = 'subscription { orderChanged { op id } }';

describe('Accept negotiation on /graphql/<uri> (issue 53 item 8)', () => {
  const stack = useStack({
    service: 'gql-accept',
    backend: { data: { shop: { orders: [{ _id: 'a1', number: 1, status: 'open', owner: 'carol' }] } } },
    users: { root: ['root'], carol: ['everything'] },
    config: { acl: { mode: 'enforce' }, features: { webhooks: 'disabled' } },
  });

  /** One request; an event stream is read only up to its first bytes, then dropped. */
  async function send(accept: string, body: Record<string, unknown> | undefined, query = '') {
    const controller = new AbortController();
    const res = await fetch(`${stack.proxy.url}/graphql/subs${query}`, {
      method: body ? 'POST' : 'GET',
      headers: { accept, authorization: CAROL, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: controller.signal,
    });
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      controller.abort();
      return { status: res.status, type, json: undefined as any };
    }
    return { status: res.status, type, json: (await res.json()) as any };
  }

  it('setup: the permissions and the app', async () => {
    await putSubscriptionPermissions(stack.proxy.url, as('root'));
    await stack.put('/gql-apps/subs', subscriptionApp());
  });

  it('a query or mutation with Accept: application/json, text/event-stream answers JSON (before: 400)', async () => {
    const post = await send(MIXED, { query: '{ orders { number } }' });
    expect(post.status, JSON.stringify(post.json)).toBe(200);
    expect(post.type).toMatch(/^application\/json/);
    expect(post.json.data.orders).toEqual([{ number: 1 }]);
    const get = await send(MIXED, undefined, `?query=${encodeURIComponent('{ orders { number } }')}`);
    expect(get.status, JSON.stringify(get.json)).toBe(200);
    expect(get.json.data.orders).toEqual([{ number: 1 }]);
    const mutation = await send(`${MIXED};q=0.9`, { query: 'mutation { createOrder(number: 2) { number } }' });
    expect(mutation.status, JSON.stringify(mutation.json)).toBe(200);
    expect(mutation.json.data.createOrder).toEqual({ number: 2 });
    // graphql-over-http's own order, event-stream last and lower.
    const ordered = await send('application/graphql-response+json, application/json;q=0.9, text/event-stream;q=0.5', { query: '{ orders { number } }' });
    expect(ordered.status, JSON.stringify(ordered.json)).toBe(200);
    expect(ordered.type).toMatch(/^application\/graphql-response\+json/);
  });

  it('a subscription with the same Accept (or event-stream ranked lower) is streamed', async () => {
    for (const accept of [MIXED, 'application/json, text/event-stream;q=0.5']) {
      const sse = await send(accept, { query: SUBSCRIPTION });
      expect(sse.status, accept).toBe(200);
      expect(sse.type, accept).toMatch(/^text\/event-stream/);
    }
    const overGet = await send(MIXED, undefined, `?query=${encodeURIComponent(SUBSCRIPTION)}`);
    expect(overGet.type).toMatch(/^text\/event-stream/);
  });

  it('text/event-stream preferred goes to the stream; q=0 or only a wildcard never does', async () => {
    // Preferred: the stream transport, which names the fix for a query.
    const preferred = await send('text/event-stream, application/json;q=0.5', { query: '{ orders { number } }' });
    expect(preferred.status).toBe(400);
    expect(JSON.stringify(preferred.json)).toMatch(/only subscriptions are served over this transport; send queries as a plain POST/);
    // Refused with q=0: a subscription is answered as JSON, naming the streaming transports (before: streamed).
    for (const accept of ['application/json, text/event-stream;q=0', '*/*']) {
      const refused = await send(accept, { query: SUBSCRIPTION });
      expect(refused.status, accept).toBe(400);
      expect(refused.json.errors[0].extensions.code, accept).toBe('SUBSCRIPTION_NEEDS_STREAM');
    }
  });

  it('the negotiation table', () => {
    expect(streamChoice(undefined)).toBe('json');
    expect(streamChoice('*/*')).toBe('json');
    expect(streamChoice('text/*')).toBe('json');
    expect(streamChoice('text/event-stream')).toBe('sse');
    expect(streamChoice('TEXT/EVENT-STREAM')).toBe('sse');
    expect(streamChoice('text/event-stream, */*;q=0.1')).toBe('sse');
    expect(streamChoice('application/json, text/event-stream')).toBe('by-operation');
    expect(streamChoice('text/event-stream, */*')).toBe('by-operation');
    expect(streamChoice('application/json;q=0.5, text/event-stream;q=0.6')).toBe('sse');
    expect(streamChoice('application/json, text/event-stream;q=0')).toBe('json');
  });
});
