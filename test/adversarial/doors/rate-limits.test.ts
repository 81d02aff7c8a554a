/**
 * SPEC §10's abuse rows, through the real proxy and a real Redis: a client that rotates keys,
 * addresses (IPv6 /64s included) or GraphQL aliases to slip past a limit; a limit reached on
 * one replica and then the other under concurrent load (the fleet's accuracy, measured and
 * printed); a key revoked while its replica holds a slice; a replica whose clock is a day
 * ahead (the built CLI in a child process with Date.now shifted), which still shares the one
 * window on Redis's clock.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, startCli, writeTempFile } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';
import { staticUsers } from '../../support/outrigger.js';
import { rateLimitHeaders } from '../../integration/limits/rate-limit-helpers.js';
import { existsSync } from 'node:fs';

const ALICE = as('alice');
const SCHEMA = `
  type Item { n: Int }
  type Query { items(limit: Int = 10): [Item] }
`;
const MAPPINGS = { Query: { items: { db: 'shop', collection: 'items', sort: { n: 1 }, limit: { $arg: 'limit' } } } };

describe('rate limits under abuse', () => {
  const stack = useStack({
    service: 'limits-abuse',
    backend: { data: { shop: { items: Array.from({ length: 120 }, (_, i) => ({ _id: `i${i}`, n: i })), misc: [{ _id: 'm' }], open: [{ _id: 'o' }], wide: [{ _id: 'w' }] } } },
    users: { root: ['root'], alice: ['user'] },
    config: {
      listen: { trustedProxies: ['127.0.0.1/32'] },
      upstream: { identity: { mode: 'headers' } },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      apiKeys: { maxKeysPerUser: 50 },
      limits: {
        policies: [
          { name: 'per-key', by: 'key', limit: 3, window: '1d', condition: "path-prefix('/shop/misc')" },
          { name: 'per-user', by: 'user', limit: 6, window: '1d', condition: "path-prefix('/shop/misc')" },
          { name: 'per-address', by: 'client', limit: 4, window: '1d', condition: "path-prefix('/shop/open')" },
          { name: 'ceiling', by: 'service', limit: 30, window: '1d', condition: "path-prefix('/shop/open')" },
          { name: 'cost', by: 'key', limit: 150, window: '1d', units: 'cost', condition: "path-prefix('/graphql')" },
          { name: 'shared', by: 'key', limit: 100, window: '1d', condition: "path-prefix('/shop/wide')" },
        ],
      },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader', 'user'] },
      open: { predicate: 'method(GET) and path-prefix(/shop/open)', roles: ['$unauthenticated'] },
      gql: { predicate: 'path-prefix(/graphql)', roles: ['reader'] },
    },
    apps: { inv: { _id: 'inv', descriptor: { uri: 'inv' }, schema: SCHEMA, mappings: MAPPINGS } },
  });

  async function issue(name: string): Promise<{ id: string; bearer: string }> {
    const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name, roles: ['reader'] } });
    expect(issued.status, issued.text).toBe(201);
    return { id: issued.json._id, bearer: `Bearer ${issued.json.key}` };
  }

  it('rotating keys: each key has its own by: key allowance, the by: user policy holds them together', async () => {
    const keys = await Promise.all(Array.from({ length: 5 }, (_, i) => issue(`rotating-${i}`)));
    let admitted = 0;
    for (let round = 0; round < 3; round++) for (const k of keys) if ((await call(stack.proxy.url, '/shop/misc', { auth: k.bearer })).status === 200) admitted++;
    expect(admitted).toBe(6);
    const refused = await call(stack.proxy.url, '/shop/misc', { auth: (await issue('rotating-new')).bearer });
    expect(refused.status).toBe(429);
    expect(refused.json.message).toMatch(/'per-user'/);
  });

  it('rotating addresses: an IPv6 /64 counts as one client; a service ceiling bounds fresh addresses', async () => {
    const from = (ip: string) => call(stack.proxy.url, '/shop/open', { headers: { 'x-forwarded-for': ip } });
    const sameSlash64: number[] = [];
    for (let i = 1; i <= 6; i++) sameSlash64.push((await from(`2001:db8:1:2::${i.toString(16)}`)).status);
    expect(sameSlash64).toEqual([200, 200, 200, 200, 429, 429]);
    expect((await from('2001:db8:1:3::1')).status).toBe(200); // the next /64 is another client
    // 40 fresh IPv4 addresses, one request each: every one is a new client, the service's ceiling holds.
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await from(`198.51.100.${i + 1}`)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30 - 5);
    const last = await from('198.51.100.200');
    expect(last.json.message).toMatch(/'ceiling'/);
  });

  it('GraphQL: aliases add up in the estimate, so splitting a query into aliases does not slip past a cost limit', async () => {
    const key = await issue('aliases');
    const before = stack.backend.requests.length;
    const res = await call(stack.proxy.url, '/graphql/inv', {
      method: 'POST',
      auth: key.bearer,
      headers: { accept: 'application/graphql-response+json' },
      body: { query: '{ a: items(limit: 100) { n } b: items(limit: 100) { n } }' },
    });
    expect(res.status).toBe(429);
    // SPEC §15: GraphQL-shaped on /graphql/<uri> (it was RESTHeart's body).
    expect(res.json.errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    expect(res.json.errors[0].message).toMatch(/rate limit 'cost': 150 units per 86400 s \(this request costs 200 units\)/);
    expect(stack.backend.requests.length).toBe(before);
  });

  it('a limit reached on one replica then the other, under concurrent load: never more than the limit (measured)', async () => {
    const replicas = [stack.proxy, await stack.start(), await stack.start()];
    const key = await issue('concurrent');
    const before = stack.backend.requests.length;
    const sent = 600;
    const results = await Promise.all(
      Array.from({ length: 30 }, async (_, worker) => {
        let ok = 0;
        for (let i = worker; i < sent; i += 30) if ((await call(replicas[i % 3]!.url, '/shop/wide', { auth: key.bearer })).status === 200) ok++;
        return ok;
      }),
    );
    const admitted = results.reduce((a, b) => a + b, 0);
    console.info(`[rate-limits] 3 replicas, ${sent} concurrent requests for one key at limit 100 (slice 5): ${admitted} admitted, backend saw ${stack.backend.requests.length - before}`);
    expect(admitted).toBeLessThanOrEqual(100);
    expect(admitted).toBeGreaterThanOrEqual(100 - 3 * 5);
    expect(stack.backend.requests.length - before).toBe(admitted);
    // Each replica now refuses.
    for (const r of replicas) expect((await call(r.url, '/shop/wide', { auth: key.bearer })).status).toBe(429);
  });

  it('a key revoked while its replica holds a slice: the next request is 401 and reaches nothing', async () => {
    const key = await issue('revoked');
    const first = await call(stack.proxy.url, '/shop/wide', { auth: key.bearer });
    expect(first.status).toBe(200);
    expect(rateLimitHeaders(first).limit?.r).toBe(99);
    expect((await call(stack.proxy.url, `/keys/${key.id}`, { method: 'DELETE', auth: ALICE })).status).toBe(204);
    const before = stack.backend.requests.length;
    await expect.poll(async () => (await call(stack.proxy.url, '/shop/wide', { auth: key.bearer })).status).toBe(401);
    expect(stack.backend.requests.length).toBe(before);
  });
});

describe('a replica whose clock is a day ahead', () => {
  const stack = useStack({
    service: 'limits-skew',
    backend: { data: { shop: { misc: [{ _id: 'm' }] } } },
    users: { root: ['root'], alice: ['user'] },
    config: {
      upstream: { identity: { mode: 'headers' } },
      acl: { mode: 'enforce' },
      features: { webhooks: 'disabled' },
      limits: { policies: [{ name: 'daily', by: 'key', limit: 10, window: '1d' }] },
    },
    permissions: {
      keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } },
      read: { predicate: 'method(GET) and path-prefix(/shop)', roles: ['reader'] },
    },
  });

  it("shares the one window on Redis's clock: a window on its own clock would have given it a fresh day", async () => {
    if (!existsSync(CLI)) throw new Error('run `npm run build` first: the skewed replica is the built CLI');
    const skew = join(tmpdir(), `outrigger-skew-${process.pid}.mjs`);
    writeFileSync(skew, 'const real = Date.now; Date.now = () => real() + 86_400_000;\n');
    const configFile = writeTempFile('skewed.yaml', {
      ...stack.raw,
      listen: { host: '127.0.0.1', port: 0 },
      users: await staticUsers({ root: ['root'], alice: ['user'] }),
      shutdown: { drainSeconds: 0, timeoutSeconds: 2 },
      log: { level: 'info' },
    });
    const skewed = await startCliWith(configFile, skew);
    try {
      const issued = await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'skew', roles: ['reader'] } });
      const key = `Bearer ${issued.json.key}`;
      for (let i = 0; i < 6; i++) expect((await call(stack.proxy.url, '/shop/misc', { auth: key })).status).toBe(200);
      const onSkewed: number[] = [];
      let tOnSkewed = 0;
      for (let i = 0; i < 6; i++) {
        const res = await call(skewed.url, '/shop/misc', { auth: key });
        onSkewed.push(res.status);
        if (res.status === 200) tOnSkewed = rateLimitHeaders(res).limit!.t;
      }
      expect(onSkewed.filter((s) => s === 200).length).toBeLessThanOrEqual(4);
      expect(onSkewed.at(-1)).toBe(429);
      // Its reset is the real midnight UTC (a duration from Redis), not its own clock's.
      const untilMidnight = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400 - Date.now() / 1000;
      expect(Math.abs(tOnSkewed - untilMidnight)).toBeLessThan(10);
    } finally {
      skewed.child.kill('SIGTERM');
      await skewed.exited;
    }
    void ROOT;
  });
});

/** The built CLI with a module preloaded (here: one that moves Date.now a day ahead). */
function startCliWith(configFile: string, preload: string) {
  const before = process.env.NODE_OPTIONS;
  process.env.NODE_OPTIONS = `${before ?? ''} --import ${preload}`.trim();
  try {
    return startCli(configFile);
  } finally {
    if (before === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = before;
  }
}
