import { describe, expect, it } from 'vitest';
import { checksumOf } from '../../../src/keys/key-format.js';
import { basic } from '../../support/outrigger.js';
import { call } from '../../support/clients/http-client.js';
import { useStack } from '../../support/fixtures.js';

/** SPEC §5.4 with Redis gone: what was verified keeps working (within the staleness bound), the rest is 503, and Redis coming back heals it. */
describe('API keys while Redis is unreachable', () => {
  const stack = useStack({
    service: 'keys-outage',
    backend: { data: { shop: { items: [{ _id: 'i1' }] } } },
    users: { root: ['root'], alice: ['user'] },
    config: { upstream: { identity: { mode: 'headers' } }, acl: { mode: 'enforce' }, features: { webhooks: 'disabled' } },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
    },
  });
  const ALICE = basic('alice', 'alice-password');

  it('keeps a cached key working, answers 503 for keys it cannot check, and recovers when Redis returns', async () => {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'outage', roles: ['reader'] } });
    expect(issued.status).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    expect((await call(stack.proxy.url, '/shop/items', { auth: key })).status).toBe(200);
    const unknownKey = `Bearer rig_${'x'.repeat(43)}${checksumOf('x'.repeat(43))}`;

    await stack.redis.stop();
    try {
      const cached = await call(stack.proxy.url, '/shop/items', { auth: key });
      expect(cached.status).toBe(200);
      expect(stack.backend.requests.at(-1)!.headers).toMatchObject({ 'x-forwarded-user': 'alice', 'x-forwarded-roles': 'reader' });
      const unknown = await call(stack.proxy.url, '/shop/items', { auth: unknownKey });
      expect(unknown.status).toBe(503);
      expect(unknown.headers['retry-after']).toBe('5');
      expect(unknown.json.message).toMatch(/cannot be verified right now because Redis is unreachable/);
      // Managing keys needs Redis too: a clear 503, not a 500.
      const issuing = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'during outage', roles: ['reader'] } });
      expect(issuing.status).toBe(503);
      expect((await call(stack.proxy.url, '/keys', { auth: ALICE })).status).toBe(503);
    } finally {
      await stack.redis.restart();
    }
    await expect.poll(async () => (await call(stack.proxy.url, '/shop/items', { auth: unknownKey })).status, { timeout: 10_000 }).toBe(401);
    expect((await call(stack.proxy.url, '/shop/items', { auth: key })).status).toBe(200);
    expect((await call(stack.proxy.url, '/keys', { auth: ALICE })).json).toHaveLength(1);
  });
});
