/**
 * Issue 53 item 5: an app is served on its own path only. Before, `/graphql/subs/x` and
 * `/graphql/subs/x/y` were served as the app `subs` (the longest uri matching whole segments), so
 * a rate-limit policy or webhook condition written as `path('/graphql/subs')` skipped them while a
 * `path-prefix` ACL let them in. Now every transport (POST, GET, GraphiQL, SSE, WebSocket) answers
 * a longer path 404 naming it, and a path() policy sees every request the app answers.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { call } from '../../support/clients/http-client.js';
import { as, useStack } from '../../support/fixtures.js';
import { putSubscriptionPermissions, rawSse, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ALICE = as('alice');
const CAROL = as('carol');
const QUERY = '{ orders { number } }';

/** The status a WebSocket upgrade to `path` is answered with (101 when it opened). */
function upgradeStatus(base: string, path: string, auth: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${path}`, 'graphql-transport-ws', { headers: { authorization: auth } });
    ws.on('open', () => {
      ws.terminate();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('error', () => resolve(0));
  });
}

describe('a GraphQL app answers on its own path only (issue 53 item 5)', () => {
  const stack = useStack({
    service: 'gql-app-paths',
    backend: { data: { shop: { orders: [{ _id: 'a1', number: 1, status: 'open', owner: 'alice' }] } } },
    users: { root: ['root'], alice: ['owner'], carol: ['everything'] },
    config: {
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'subs-app', by: 'user', limit: 3, window: '1d', condition: "path('/graphql/subs')" }] },
    },
  });

  it('setup: the permissions (a path-prefix ACL on /graphql/subs) and two apps, subs and subs/v2', async () => {
    await putSubscriptionPermissions(stack.proxy.url, as('root'));
    await stack.put('/gql-apps/subs', subscriptionApp());
    await stack.put('/gql-apps/subs-v2', subscriptionApp('subs-v2', 'subs/v2'));
  });

  it('POST, GET and GraphiQL to a longer path are 404 naming the path; the app itself and subs/v2 answer', async () => {
    const base = stack.proxy.url;
    for (const path of ['/graphql/subs/x', '/graphql/subs/x/y', '/graphql/subs/v3']) {
      const post = await call(base, path, { method: 'POST', auth: CAROL, body: { query: QUERY } });
      expect(post.status, `POST ${path}: ${post.text}`).toBe(404);
      // SPEC §15: GraphQL-shaped on /graphql/<uri> (it was RESTHeart's body).
      expect(post.json.errors[0]).toEqual({ message: expect.stringContaining(`no GraphQL app is served at ${path}`), extensions: { code: 'APP_NOT_FOUND' } });
      const get = await call(base, `${path}?query=${encodeURIComponent(QUERY)}`, { auth: CAROL });
      expect(get.status, `GET ${path}`).toBe(404);
      const graphiql = await call(base, path, { auth: CAROL, headers: { accept: 'text/html' } });
      expect(graphiql.status, `GraphiQL ${path}`).toBe(404);
      expect(graphiql.json.errors[0].message).toContain(`no GraphQL app is served at ${path}`);
    }
    // The app on its own path, with or without one trailing slash, and the longer uri's own app.
    for (const path of ['/graphql/subs/v2', '/graphql/subs/v2/']) {
      const own = await call(base, path, { method: 'POST', auth: CAROL, body: { query: QUERY } });
      expect(own.status, `${path}: ${own.text}`).toBe(200);
      expect(own.json.data.orders).toEqual([{ number: 1 }]);
    }
  });

  it('a subscription over SSE or WebSocket on a longer path is refused 404', async () => {
    const sse = await rawSse(stack.proxy.url, 'subs/x', 'subscription { orderChanged { op id } }', { auth: CAROL });
    try {
      expect(sse.status).toBe(404);
      expect(await sse.text()).toContain('no GraphQL app is served at /graphql/subs/x');
    } finally {
      await sse.close();
    }
    expect(await upgradeStatus(stack.proxy.url, '/graphql/subs/x', CAROL)).toBe(404);
    expect(await upgradeStatus(stack.proxy.url, '/graphql/subs/x/y', CAROL)).toBe(404);
    // The app's own path still upgrades.
    expect(await upgradeStatus(stack.proxy.url, '/graphql/subs', CAROL)).toBe(101);
  });

  it("a rate-limit policy on path('/graphql/subs') sees every request the app answers", async () => {
    const statuses: number[] = [];
    // Before: the /x and /x/y requests were answered by the app and never counted.
    for (const path of ['/graphql/subs', '/graphql/subs/x', '/graphql/subs/x/y', '/graphql/subs/', '/graphql/subs/x', '/graphql/subs', '/graphql/subs/x/y', '/graphql/subs']) {
      const res = await call(stack.proxy.url, path, { method: 'POST', auth: ALICE, body: { query: QUERY } });
      if (res.status === 200) statuses.push(res.status);
      else expect([404, 429], `${path}: ${res.status} ${res.text}`).toContain(res.status);
    }
    expect(statuses.length).toBe(3);
  });
});
