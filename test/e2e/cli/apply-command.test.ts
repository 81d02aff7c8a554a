import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { runCli, writeTempFile } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { basic, startTestOutrigger, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

const app = (description: string) => ({
  _id: 'shop',
  descriptor: { name: 'Shop', description, uri: 'shop' },
  schema: 'type Order { _id: String, status: String }\ntype Query { orders: [Order] }',
  mappings: { Query: { orders: { collection: 'orders' } } },
});
const permission = (priority: number) => ({ _id: 'read-orders', roles: ['user'], predicate: 'method(GET) and path-prefix(/restheart/orders)', priority });
const webhook = { _id: 'orders-hook', name: 'orders', type: 'http', condition: 'path-prefix(/restheart/orders)', url: 'http://127.0.0.1:9/hook' };

/** `outrigger apply -c FILE -f SETUP`: only SETUP is applied, and the report compares with what is stored. */
describe('outrigger apply (built CLI)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let configFile: string;
  let raw: Record<string, unknown>;
  const ROOT = basic('root', 'root-password');

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: {} });
    const bootstrap = writeTempFile('bootstrap.yaml', { apps: [app('from the bootstrap')] });
    raw = {
      service: { id: 'e2e-apply' },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'] }),
      acl: { mode: 'enforce', bootstrap },
      webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
    };
    configFile = writeTempFile('outrigger.yaml', { ...raw, log: { level: 'warn' } });
  });

  afterAll(async () => {
    await backend?.close();
    await redis?.close();
  });

  it('leaves the bootstrap alone: an app changed through the API survives apply -f of another file', async () => {
    const running = await startTestOutrigger(raw);
    try {
      const put = await call(running.url, '/gql-apps/shop', { method: 'PUT', auth: ROOT, body: app('changed through the API') });
      expect(put.status).toBe(200);

      const setup = writeTempFile('setup.yaml', { permissions: [permission(10)] });
      const first = await runCli(['apply', '-c', configFile, '-f', setup], { timeoutMs: 60_000 });
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/^created\s+permissions\/read-orders$/m);
      expect(first.stdout).toMatch(/1 created, 0 updated, 0 unchanged/);
      expect(first.stdout).not.toMatch(/apps\/shop/);

      const stored = await call(running.url, '/gql-apps/shop', { auth: ROOT });
      expect(stored.json.descriptor.description).toBe('changed through the API');
    } finally {
      await running.stop();
    }
  }, 60_000);

  it('reports unchanged for what is stored as given, updated for what differs, created for what is new', async () => {
    const file = writeTempFile('setup.yaml', { permissions: [permission(10)], apps: [app('changed through the API')], webhooks: [webhook] });
    const first = await runCli(['apply', '-c', configFile, '-f', file], { timeoutMs: 60_000 });
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^unchanged\s+permissions\/read-orders$/m);
    expect(first.stdout).toMatch(/^unchanged\s+apps\/shop$/m);
    expect(first.stdout).toMatch(/^created\s+webhooks\/orders-hook$/m);

    const again = await runCli(['apply', '-c', configFile, '-f', file], { timeoutMs: 60_000 });
    expect(again.stdout).toMatch(/0 created, 0 updated, 3 unchanged/);

    writeFileSync(file, stringify({ permissions: [permission(20)], apps: [app('changed by the file')], webhooks: [webhook] }));
    const changed = await runCli(['apply', '-c', configFile, '-f', file], { timeoutMs: 60_000 });
    expect(changed.stdout).toMatch(/^updated\s+permissions\/read-orders$/m);
    expect(changed.stdout).toMatch(/^updated\s+apps\/shop$/m);
    expect(changed.stdout).toMatch(/^unchanged\s+webhooks\/orders-hook$/m);
    expect(changed.stdout).toMatch(/0 created, 2 updated, 1 unchanged/);
  }, 120_000);
});
