/**
 * Webhooks see GraphQL writes (SPEC §6.4, issue 27 item 3): each backend write a mutation makes
 * is an exchange for the webhooks, with the backend request (method, the path a client of
 * Outrigger would use, body) and the backend's response, and `request.via: graphql` with the app
 * and operation. A webhook on `path-prefix('/shop/orders') and method(POST)` fires for
 * `createOrder` as for a REST `POST /shop/orders`; templates and the log's Incoming Request show
 * `via` and `graphql`; the REST event has neither.
 */
import { describe, expect, it } from 'vitest';
import { call, untilKnown, waitFor } from '../webhooks/webhooks-helpers.js';
import { gql } from './graphql-helpers.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { mutationApp, mutationData, putMutationPermissions } from './graphql-mutations-helpers.js';

describe('webhooks: GraphQL mutations are exchanges too', () => {
  const stack = useStack({
    service: 'gql-mutation-hooks',
    backend: { data: mutationData() },
    jwtIdentity: true,
    target: true,
    users: { root: ['root'], alice: ['writer'] },
    config: { acl: { mode: 'enforce' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms'] } },
    outrigger: { worker: true },
  });

  it('a webhook on path-prefix(/shop/orders) and method(POST) fires for createOrder as for POST /shop/orders, with request.via and request.graphql', async () => {
    await putMutationPermissions(stack.proxy.url, ROOT);
    expect((await call(stack.proxy.url, '/gql-apps/writes', { method: 'PUT', auth: ROOT, body: mutationApp() })).status).toBe(201);
    const created = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: {
        name: 'new orders',
        type: 'http',
        condition: "path-prefix('/shop/orders') and method(POST)",
        url: `${stack.target.url}/orders`,
        transform: {
          enabled: true,
          template:
            '{"path": "{{request.path}}", "number": {{request.body.number}}, "owner": "{{request.body.owner}}", "status": {{response.statusCode}}, "via": "{{request.via}}", "app": "{{request.graphql.app}}", "operation": "{{request.graphql.operation}}"}',
        },
      },
    });
    expect(created.status).toBe(201);
    const hook = created.json;
    await untilKnown([stack.proxy], hook._id);

    const res = await gql(stack.proxy.url, 'writes', 'mutation NewOrder { createOrder(number: 900, total: 9) { number } }', { auth: as('alice'), operationName: 'NewOrder' });
    expect(res.json.data.createOrder).toEqual({ number: 900 });
    const rest = await call(stack.proxy.url, '/shop/orders', { method: 'POST', auth: as('alice'), body: { number: 901, owner: 'alice' } });
    expect(rest.status).toBe(201);

    const got = await waitFor(
      () => stack.target.on('/orders'),
      (r) => r.length === 2,
      10_000,
      'two deliveries',
    );
    const bodies = got.map((g) => JSON.parse(g.body)).sort((a, b) => a.number - b.number);
    expect(bodies).toEqual([
      { path: '/shop/orders', number: 900, owner: 'alice', status: 201, via: 'graphql', app: 'writes', operation: 'NewOrder' },
      { path: '/shop/orders', number: 901, owner: 'alice', status: 201, via: '', app: '', operation: '' },
    ]);

    // The log's Incoming Request shows via and graphql for the mutation's write, neither for the REST request.
    const logs = await waitFor(
      async () => (await call(stack.proxy.url, `/_admin/webhooks/${hook._id}/logs`, { auth: ROOT })).json as Array<Record<string, any>>,
      (l) => l.filter((e) => e.status === 'success').length === 2,
      5000,
      'two log entries',
    );
    const incoming = logs
      .filter((e) => e.status === 'success')
      .map((e) => e.detail.incomingRequest)
      .sort((a, b) => a.body.number - b.body.number);
    expect(incoming[0]).toMatchObject({ method: 'POST', path: '/shop/orders', via: 'graphql', graphql: { app: 'writes', operation: 'NewOrder' } });
    expect(incoming[0].headers.authorization).toBe('[redacted]');
    expect(incoming[1].via).toBeUndefined();
    expect(incoming[1].graphql).toBeUndefined();
  });

  it('a bulk PATCH fires the webhooks on PATCH, with the filter in its query and the backend counts in its response', async () => {
    const patchHook = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'status changes', type: 'http', condition: "path-prefix('/shop/orders') and method(PATCH)", url: `${stack.target.url}/patches` },
    });
    await untilKnown([stack.proxy], patchHook.json._id);
    const res = await gql(stack.proxy.url, 'writes', 'mutation { closeAll(owner: "bob") }', { auth: as('alice') });
    expect(res.json.data.closeAll).toBeGreaterThan(0);
    const [delivery] = await waitFor(
      () => stack.target.on('/patches'),
      (r) => r.length === 1,
      10_000,
      'the PATCH delivery',
    );
    const payload = JSON.parse(delivery!.body);
    expect(payload.request).toMatchObject({
      method: 'PATCH',
      path: '/shop/orders/*',
      query: { filter: '{"owner":"bob","status":"open"}' },
      via: 'graphql',
      graphql: { app: 'writes', operation: null },
    });
    expect(payload.response.statusCode).toBe(200);
    expect(payload.response.body).toMatchObject({ modified: res.json.data.closeAll });
  });

  it("a recording captures the mutation's backend write beside the client's GraphQL request, with via, graphql and each webhook's evaluation", async () => {
    expect((await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'POST', auth: ROOT })).status).toBe(201);
    try {
      const res = await gql(stack.proxy.url, 'writes', 'mutation Recorded { createOrder(number: 902, total: 3) { number } }', { auth: as('alice'), operationName: 'Recorded' });
      expect(res.json.data.createOrder).toEqual({ number: 902 });
      const view = await waitFor(
        async () => (await call(stack.proxy.url, '/_admin/webhooks/recording?pagesize=100', { auth: ROOT })).json,
        (v) => v.requests?.some((r: any) => r.via === 'graphql') && v.requests?.some((r: any) => r.path === '/graphql/writes'),
        5000,
        'the GraphQL request and its backend write in the recording',
      );
      const write = view.requests.find((r: any) => r.via === 'graphql');
      expect(write).toMatchObject({
        method: 'POST',
        path: '/shop/orders',
        body: { number: 902, owner: 'alice' },
        response: { statusCode: 201 },
        completed: true,
        graphql: { app: 'writes', operation: 'Recorded' },
      });
      expect(write.headers.authorization).toBe('[redacted]');
      const byName = Object.fromEntries(write.webhooks.map((w: any) => [w.name, w.matched]));
      expect(byName).toEqual({ 'new orders': true, 'status changes': false });
      // The client's own request is recorded as what it was: a POST of the GraphQL app, not a write.
      const client = view.requests.find((r: any) => r.path === '/graphql/writes');
      expect(client).toMatchObject({ method: 'POST', completed: true, response: { statusCode: 200 } });
      expect(client.via).toBeUndefined();
      expect(client.webhooks.every((w: any) => w.matched === false)).toBe(true);
    } finally {
      await call(stack.proxy.url, '/_admin/webhooks/recording', { method: 'DELETE', auth: ROOT });
    }
  });
});
