import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checksumOf } from '../../src/keys/key-format.js';
import { startStandinBackend, type StandinBackend } from '../../examples/standin-backend/index.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { basic, startTestOutrigger, staticUsers } from '../support/outrigger.js';
import { call } from '../support/http-client.js';


/** SPEC §5.4 with Redis gone: what was verified keeps working (within the staleness bound), the rest is 503, and Redis coming back heals it. */
describe('API keys while Redis is unreachable', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;
  const ALICE = basic('alice', 'alice-password');

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { items: [{ _id: 'i1' }] } } });
    proxy = await startTestOutrigger({
      service: { id: 'keys-outage' },
      upstream: { url: backend.url, identity: { mode: 'headers' } },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'], alice: ['user'] }),
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
    });
    const root = basic('root', 'root-password');
    await call(proxy.url, '/_admin/acl/keys', { method: 'PUT', auth: root, body: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } } });
    await call(proxy.url, '/_admin/acl/read', { method: 'PUT', auth: root, body: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] } });
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('keeps a cached key working, answers 503 for keys it cannot check, and recovers when Redis returns', async () => {
    const issued = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'outage', roles: ['reader'] } });
    expect(issued.status).toBe(201);
    const key = `Bearer ${issued.json.key}`;
    expect((await call(proxy.url, '/shop/items', { auth: key })).status).toBe(200);
    const unknownKey = `Bearer rig_${'x'.repeat(43)}${checksumOf('x'.repeat(43))}`;

    await redis.stop();
    try {
      const cached = await call(proxy.url, '/shop/items', { auth: key });
      expect(cached.status).toBe(200);
      expect(backend.requests.at(-1)!.headers).toMatchObject({ 'x-forwarded-user': 'alice', 'x-forwarded-roles': 'reader' });
      const unknown = await call(proxy.url, '/shop/items', { auth: unknownKey });
      expect(unknown.status).toBe(503);
      expect(unknown.headers['retry-after']).toBe('5');
      expect(unknown.json.message).toMatch(/cannot be verified right now because Redis is unreachable/);
      // Managing keys needs Redis too: a clear 503, not a 500.
      const issuing = await call(proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'during outage', roles: ['reader'] } });
      expect(issuing.status).toBe(503);
      expect((await call(proxy.url, '/keys', { auth: ALICE })).status).toBe(503);
    } finally {
      await redis.restart();
    }
    await expect.poll(async () => (await call(proxy.url, '/shop/items', { auth: unknownKey })).status, { timeout: 10_000 }).toBe(401);
    expect((await call(proxy.url, '/shop/items', { auth: key })).status).toBe(200);
    expect((await call(proxy.url, '/keys', { auth: ALICE })).json).toHaveLength(1);
  });
});
