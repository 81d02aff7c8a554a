/**
 * GraphQL app documents (SPEC §6.1, §6.2) through a running Outrigger: every validation error
 * through POST, PUT and PATCH (400 naming the problem), 409 for a uri another app serves, the
 * merged PATCH validated whole, who may write, a change made through a second Outrigger process
 * (the built CLI) served by another replica within 1 s, and `outrigger apply` / `check` / `acl.bootstrap` accepting apps.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { basic, BUS_ONLY_POLL_MS, startTestOutrigger } from '../../support/outrigger.js';
import { call, gql, pollUntil, shopData } from './graphql-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

const ALICE = basic('alice', 'alice-password');
const WRITER = basic('writer', 'writer-password');

/** A small valid app: a root query mapping with an $arg, a $fk join, a rename. */
function miniApp(id: string, uri = id): Record<string, any> {
  return {
    _id: id,
    descriptor: { name: `App ${id}`, uri },
    schema:
      'type Order { number: Int, total: Int, user: User } type User { id: String, name: String } input Range { min: Int } type Query { orders(status: String, range: Range, limit: Int): [Order] }',
    mappings: {
      Order: { user: { db: 'shop', collection: 'users', find: { _id: { $fk: 'userId' } } } },
      User: { id: '_id' },
      Query: { orders: { db: 'shop', collection: 'orders', find: { status: { $arg: 'status' } }, sort: { number: 1 }, limit: { $arg: 'limit' } } },
    },
  };
}

/** Every way an app document can be wrong, with the message that must name the problem. */
const INVALID: Array<[string, (d: Record<string, any>) => void, RegExp]> = [
  ['SDL that does not parse', (d) => (d.schema = 'type Query {'), /schema is not valid GraphQL SDL: Syntax Error.*line 1, column 13/],
  ['a schema without a Query type', (d) => (d.schema = 'type Order { n: Int }'), /schema must define a Query type/],
  ['no schema', (d) => delete d.schema, /schema must be a non-empty string/],
  ['a mapped type the schema lacks', (d) => (d.mappings.Ordr = { user: 'x' }), /mappings\.Ordr: the schema has no type named Ordr \(did you mean "Order"\?\)/],
  ['a mapped field the type lacks', (d) => (d.mappings.Query.order = { collection: 'orders' }), /mappings\.Query\.order: type Query has no field order \(did you mean "orders"\?\)/],
  ['a field mapping that is neither a path nor a query', (d) => (d.mappings.User.name = 5), /mappings\.User\.name must be a dot path string or a query mapping object/],
  ['a query mapping without collection', (d) => delete d.mappings.Query.orders.collection, /mappings\.Query\.orders\.collection is required/],
  ['a db that is not a name', (d) => (d.mappings.Query.orders.db = 5), /mappings\.Query\.orders\.db must be a non-empty name/],
  ['a find that is not an object', (d) => (d.mappings.Query.orders.find = 'x'), /mappings\.Query\.orders\.find must be an object/],
  ['a sort that is not an object', (d) => (d.mappings.Query.orders.sort = [1]), /mappings\.Query\.orders\.sort must be an object/],
  ['a limit that is not an integer', (d) => (d.mappings.Query.orders.limit = 1.5), /mappings\.Query\.orders\.limit must be an integer/],
  ['a skip that is not an integer', (d) => (d.mappings.Query.orders.skip = 'a'), /mappings\.Query\.orders\.skip must be an integer/],
  ['a literal limit above graphql.maxLimit', (d) => (d.mappings.Query.orders.limit = 1001), /mappings\.Query\.orders\.limit must be at most 1000/],
  [
    'an $arg the field does not declare',
    (d) => (d.mappings.Query.orders.find = { status: { $arg: 'state' } }),
    /find\.status\.\$arg: the field orders has no argument "state" .*did you mean "status"/,
  ],
  ['an $arg dot path the input type lacks', (d) => (d.mappings.Query.orders.find = { total: { $gte: { $arg: 'range.max' } } }), /input type Range has no field "max"/],
  ['$fk in a root type mapping', (d) => (d.mappings.Query.orders.find = { _id: { $fk: 'x' } }), /\$fk is only allowed in mappings of non-root types/],
  ['$where in a find', (d) => (d.mappings.Query.orders.find = { $where: 'true' }), /the operator \$where runs server-side JavaScript/],
  [
    'an aggregation mapping (stages)',
    (d) => (d.mappings.Query.orders = { db: 'shop', collection: 'orders', stages: [] }),
    /aggregation mappings are turned off: the HTTP backend cannot run ad-hoc pipelines.*graphql.aggregations: true/,
  ],
  [
    'a Mutation mapping without insert, update or delete',
    (d) => ((d.schema += ' type Mutation { x: Int }'), (d.mappings.Mutation = { x: { collection: 'a' } })),
    /mappings\.Mutation\.x must have exactly one of insert, update or delete/,
  ],
  ['empty Query mappings', (d) => (d.mappings.Query = {}), /mappings\.Query must map at least one field/],
  ['a uri with characters outside [A-Za-z0-9._~-]', (d) => (d.descriptor.uri = 'shop v2'), /descriptor\.uri segment "shop v2" may only contain/],
  ['a uri with a .. segment', (d) => (d.descriptor.uri = 'shop/../admin'), /descriptor\.uri must not contain "\." or "\.\." segments/],
  ['descriptor.enabled that is not a boolean', (d) => (d.descriptor.enabled = 'yes'), /descriptor\.enabled must be true or false/],
  ['an unknown descriptor field', (d) => (d.descriptor.url = 'x'), /descriptor\.url is not a descriptor field.*did you mean "uri"/],
  ['an unknown top-level field', (d) => (d.extra = 1), /extra is not a field of a GraphQL app document/],
  ['descriptor.cache that is not an object', (d) => (d.descriptor.cache = 30), /descriptor\.cache must be an object \{maxAgeSeconds\} such as \{"maxAgeSeconds": 30\}/],
  ['descriptor.cache.maxAgeSeconds of 0', (d) => (d.descriptor.cache = { maxAgeSeconds: 0 }), /descriptor\.cache\.maxAgeSeconds must be an integer from 1 to 86400 \(got 0\)/],
  ['descriptor.cache.maxAgeSeconds that is a string', (d) => (d.descriptor.cache = { maxAgeSeconds: '60' }), /descriptor\.cache\.maxAgeSeconds must be an integer from 1 to 86400 \(got "60"\)/],
  ['descriptor.cache without maxAgeSeconds', (d) => (d.descriptor.cache = {}), /descriptor\.cache\.maxAgeSeconds is required/],
  ['an unknown field of descriptor.cache', (d) => (d.descriptor.cache = { maxAge: 5, maxAgeSeconds: 5 }), /descriptor\.cache\.maxAge is not a field of descriptor\.cache \(allowed: maxAgeSeconds\)/],
];

/** RFC 7396 merge patch turning `from` into `to` (arrays and scalars replace; removed keys become null). */
function mergePatch(from: Record<string, any>, to: Record<string, any>): Record<string, any> {
  const patch: Record<string, any> = {};
  for (const key of new Set([...Object.keys(from), ...Object.keys(to)])) {
    const a = from[key];
    const b = to[key];
    if (!(key in to)) patch[key] = null;
    else if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
      const sub = mergePatch(a, b);
      if (Object.keys(sub).length) patch[key] = sub;
    } else if (JSON.stringify(a) !== JSON.stringify(b)) patch[key] = b;
  }
  return patch;
}

describe('GraphQL app documents', () => {
  const stack = useStack({
    service: 'gql-apps',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], writer: ['app-writer'] },
    config: { acl: { mode: 'own-routes' } },
    permissions: {
      'app-writers': { predicate: 'path-prefix(/gql-apps)', roles: ['app-writer'], priority: 1 },
      'graphql-users': { predicate: 'path-prefix(/graphql)', roles: ['user', '$unauthenticated'], priority: 1 },
    },
  });

  const apps = (path = '', init: Parameters<typeof call>[2] = {}) => call(stack.proxy.url, `/gql-apps${path}`, { auth: ROOT, ...init });

  describe('validation at write: 400 naming the problem', () => {
    beforeAll(async () => {
      expect((await apps('/stored', { method: 'PUT', body: miniApp('stored') })).status).toBe(201);
    });

    for (const [name, breakIt, message] of INVALID) {
      it(`refuses ${name} on POST, PUT and PATCH`, async () => {
        const id = `bad-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`;
        const doc = miniApp(id);
        breakIt(doc);
        const posted = await apps('', { method: 'POST', body: doc });
        expect(posted.status).toBe(400);
        expect(posted.json['http status code']).toBe(400);
        expect(posted.json.message).toMatch(message);
        const put = await apps(`/${id}`, { method: 'PUT', body: doc });
        expect(put.status).toBe(400);
        expect(put.json.message).toMatch(message);
        expect((await apps(`/${id}`)).status).toBe(404);

        const stored = miniApp('stored');
        const broken = miniApp('stored');
        breakIt(broken);
        const patched = await apps('/stored', { method: 'PATCH', body: mergePatch(stored, broken) });
        expect(patched.status).toBe(400);
        expect(patched.json.message).toMatch(message);
        // Nothing changed: the stored document and the served app are as before.
        expect((await apps('/stored')).json).toEqual({ _id: 'stored', ...miniApp('stored'), descriptor: { ...miniApp('stored').descriptor, enabled: true } });
        expect((await gql(stack.proxy.url, 'stored', '{ orders(limit: 1) { number } }', { auth: ALICE })).status).toBe(200);
      });
    }

    it('reports every problem of one document at once', async () => {
      const doc = miniApp('many');
      doc.extra = true;
      doc.descriptor.uri = 'a b';
      doc.mappings.Query.orders.limit = 5000;
      doc.mappings.User.nme = 'name';
      const res = await apps('', { method: 'POST', body: doc });
      expect(res.status).toBe(400);
      for (const part of [/extra is not a field/, /descriptor\.uri segment "a b"/, /limit must be at most 1000/, /mappings\.User\.nme: type User has no field nme \(did you mean "name"\?\)/])
        expect(res.json.message).toMatch(part);
    });

    it('validates the merged result of a PATCH whole', async () => {
      // The patch alone is a fine schema, but the stored mappings name Query.orders, which it drops.
      const res = await apps('/stored', { method: 'PATCH', body: { schema: 'type Order { number: Int } type Query { all: [Order] }' } });
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/mappings\.Query\.orders: type Query has no field orders/);
      // Patching schema and mappings together is accepted, and served at once.
      const ok = await apps('/stored', {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: { schema: 'type Order { number: Int } type Query { all: [Order] }', mappings: { Order: null, User: null, Query: { orders: null, all: { db: 'shop', collection: 'orders', limit: 2 } } } },
      });
      expect(ok.status).toBe(200);
      expect(ok.json.mappings).toEqual({ Query: { all: { db: 'shop', collection: 'orders', limit: 2 } } });
      const served = await gql(stack.proxy.url, 'stored', '{ all { number } }', { auth: ALICE });
      expect(served.status).toBe(200);
      expect(served.json.data.all).toHaveLength(2);
      expect((await apps('/stored', { method: 'PUT', body: miniApp('stored') })).status).toBe(200);
    });
  });

  describe('uri rules', () => {
    it('409 for a uri another app already serves, on POST, PUT and PATCH; an app keeps its own uri', async () => {
      expect((await apps('/first', { method: 'PUT', body: miniApp('first', 'taken') })).status).toBe(201);
      const posted = await apps('', { method: 'POST', body: miniApp('second', 'taken') });
      expect(posted.status).toBe(409);
      expect(posted.json['http status code']).toBe(409);
      expect(posted.json.message).toMatch(/URI collision: the GraphQL app "first" is already served at \/graphql\/taken/);
      // A leading and trailing slash are dropped before comparing.
      expect((await apps('/second', { method: 'PUT', body: miniApp('second', '/taken/') })).status).toBe(409);
      expect((await apps('/second', { method: 'PUT', body: miniApp('second', 'free') })).status).toBe(201);
      const patched = await apps('/second', { method: 'PATCH', body: { descriptor: { uri: 'taken' } } });
      expect(patched.status).toBe(409);
      expect((await apps('/first', { method: 'PUT', body: { ...miniApp('first', 'taken'), descriptor: { uri: 'taken', name: 'renamed' } } })).status).toBe(200);
      // A disabled app still holds its uri.
      expect((await apps('/first', { method: 'PATCH', body: { descriptor: { enabled: false } } })).status).toBe(200);
      expect((await apps('', { method: 'POST', body: miniApp('third', 'taken') })).status).toBe(409);
      // The same _id twice: 409 too (use PUT to replace).
      const again = await apps('', { method: 'POST', body: miniApp('first', 'elsewhere') });
      expect(again.status).toBe(409);
      expect(again.json.message).toMatch(/already exists; use PUT/);
    });

    it('accepts descriptor.cache without cache.rules and without a warning: the app starts the cache itself', async () => {
      const doc = miniApp('cached-answers');
      doc.descriptor.cache = { maxAgeSeconds: 30 };
      const put = await apps('/cached-answers', { method: 'PUT', body: doc });
      expect(put.status).toBe(201);
      expect(put.json.descriptor.cache).toEqual({ maxAgeSeconds: 30 });
      expect(put.json.warnings).toBeUndefined();
      expect((await apps('/cached-answers', { method: 'DELETE' })).status).toBeLessThan(300);
    });

    it('one uri may extend another; a request goes to the longest uri matching whole segments', async () => {
      const v1 = miniApp('shop-v1', 'shop');
      const v2 = miniApp('shop-v2', '/shop/v2');
      v2.mappings.Query.orders.limit = 1;
      v2.schema = v2.schema.replace('limit: Int', 'max: Int');
      expect((await apps('', { method: 'POST', body: v1 })).status).toBe(201);
      const created = await apps('', { method: 'POST', body: v2 });
      expect(created.status).toBe(201);
      expect(created.json.descriptor.uri).toBe('shop/v2');
      expect(created.headers.location).toBe('/gql-apps/shop-v2');
      const one = await gql(stack.proxy.url, 'shop', '{ orders(limit: 3) { number } }');
      expect(one.json.data.orders).toHaveLength(3);
      const two = await gql(stack.proxy.url, 'shop/v2', '{ orders { number } }');
      expect(two.json.data.orders).toHaveLength(1);
      expect((await gql(stack.proxy.url, 'shopping', '{ orders { number } }')).status).toBe(404);
    });
  });

  describe('who may write', () => {
    it('admin roles or an allowing permission; others 401/403', async () => {
      expect((await call(stack.proxy.url, '/gql-apps')).status).toBe(401);
      const denied = await call(stack.proxy.url, '/gql-apps', { method: 'POST', auth: ALICE, body: miniApp('by-alice') });
      expect(denied.status).toBe(403);
      const byWriter = await call(stack.proxy.url, '/gql-apps', { method: 'POST', auth: WRITER, body: miniApp('by-writer') });
      expect(byWriter.status).toBe(201);
      expect(byWriter.json._id).toBe('by-writer');
      expect((await call(stack.proxy.url, '/gql-apps/by-writer', { method: 'DELETE', auth: WRITER })).status).toBe(204);
    });

    it('lists with X-Total-Count and search, reads one, deletes (the app stops answering at once)', async () => {
      expect((await apps('/to-delete', { method: 'PUT', body: miniApp('to-delete') })).status).toBe(201);
      const list = await apps('?pagesize=1000');
      expect(list.status).toBe(200);
      expect(Array.isArray(list.json)).toBe(true);
      expect(Number(list.headers['x-total-count'])).toBe(list.json.length);
      expect(list.json.map((a: { _id: string }) => a._id)).toContain('to-delete');
      const searched = await apps('?search=to-del');
      expect(searched.json.map((a: { _id: string }) => a._id)).toEqual(['to-delete']);
      expect((await gql(stack.proxy.url, 'to-delete', '{ orders(limit: 1) { number } }')).status).toBe(200);
      expect((await apps('/to-delete', { method: 'DELETE' })).status).toBe(204);
      expect((await gql(stack.proxy.url, 'to-delete', '{ orders(limit: 1) { number } }')).status).toBe(404);
      expect((await apps('/to-delete', { method: 'DELETE' })).status).toBe(404);
    });
  });

  describe('other replicas and the CLI', () => {
    let configFile: string;
    let second: RunningCli | null = null;
    /** A replica whose version poll is 10 min away: it learns of a change through the change bus or not in time (issue 54). */
    let reader: Awaited<ReturnType<typeof stack.start>>;

    beforeAll(async () => {
      const users = stack.raw.users.static.map((u: { id: string; password: string; roles: string[] }) => ({ ...u }));
      configFile = writeTempFile('outrigger.yaml', {
        ...stack.raw,
        users: { source: 'static', static: users },
        listen: { host: '127.0.0.1', port: 0 },
        shutdown: { drainSeconds: 0 },
        log: { level: 'info' },
      });
      second = await startCli(configFile, ['--no-worker']);
      reader = await stack.start({}, { documentPollMs: BUS_ONLY_POLL_MS });
    }, 90_000);
    afterAll(async () => {
      if (second) {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    });

    it('an app saved, disabled, enabled and deleted through a second Outrigger process is served so by another replica within 1 s (goal)', async () => {
      // SPEC §6.3: every other replica within 1 s. The app is written through the built CLI's
      // process and read on a replica whose version poll is 10 min away, so only the change bus
      // (from one process to another) meets the bound: that goal + 3 s for a loaded machine
      // (issue 40). Without the bus it fails (issue 54).
      const BOUND_MS = 1000 + 3000;
      const apps = (path = '', init: Parameters<typeof call>[2] = {}) => call(second!.url, `/gql-apps${path}`, { auth: ROOT, ...init });
      const q = '{ orders(limit: 1) { number } }';
      const status = async () => (await gql(reader.url, 'replicated', q)).status;
      expect(await status()).toBe(404);

      expect((await apps('/replicated', { method: 'PUT', body: miniApp('replicated') })).status).toBe(201);
      const created = await pollUntil(async () => (await status()) === 200, 2 * BOUND_MS, 5);
      expect((await apps('/replicated', { method: 'PATCH', body: { descriptor: { enabled: false } } })).status).toBe(200);
      const disabled = await pollUntil(async () => (await status()) === 404, 2 * BOUND_MS, 5);
      expect((await apps('/replicated', { method: 'PATCH', body: { descriptor: { enabled: true } } })).status).toBe(200);
      const enabled = await pollUntil(async () => (await status()) === 200, 2 * BOUND_MS, 5);
      expect((await apps('/replicated', { method: 'DELETE' })).status).toBe(204);
      const deleted = await pollUntil(async () => (await status()) === 404, 2 * BOUND_MS, 5);
      console.log(`the other replica saw: created after ${created.toFixed(0)} ms, disabled ${disabled.toFixed(0)} ms, enabled ${enabled.toFixed(0)} ms, deleted ${deleted.toFixed(0)} ms`);
      for (const ms of [created, disabled, enabled, deleted]) expect(ms).toBeLessThan(BOUND_MS);
    });

    // Each runs the CLI (a Node process) several times: seconds apiece on a loaded machine (issue 40).
    const CLI_TEST_MS = 120_000;

    it(
      '`outrigger apply` upserts apps with the same validation, all or nothing, and running processes serve them',
      async () => {
        const setup = writeTempFile('setup.yaml', { apps: [miniApp('applied'), miniApp('applied-too', 'applied/too')] });
        const first = await runCli(['apply', '-c', configFile, '-f', setup]);
        expect(first.stderr).toBe('');
        expect(first.code).toBe(0);
        expect(first.stdout).toMatch(/created\s+apps\/applied\n/);
        expect(first.stdout).toMatch(/created\s+apps\/applied-too\n/);
        expect(first.stdout).toMatch(/2 created, 0 updated, 0 unchanged/);
        // The apply process announces what it wrote on the change bus: a replica that hears it
        // serves both apps within 1 s goal + 3 s for a loaded machine (issue 54).
        const applied = await pollUntil(async () => (await gql(reader.url, 'applied/too', '{ orders(limit: 1) { number } }')).status === 200, 8000, 5);
        expect(applied).toBeLessThan(1000 + 3000);
        expect((await gql(reader.url, 'applied', '{ orders(limit: 1) { number } }')).status).toBe(200);
        await pollUntil(async () => (await gql(stack.proxy.url, 'applied/too', '{ orders(limit: 1) { number } }')).status === 200, 10_000, 5);
        await pollUntil(async () => (await gql(second!.url, 'applied', '{ orders(limit: 1) { number } }')).status === 200, 10_000, 5);
        expect((await apps('/applied')).json.descriptor).toEqual({ name: 'App applied', uri: 'applied', enabled: true });

        const again = await runCli(['apply', '-c', configFile, '-f', setup]);
        expect(again.code).toBe(0);
        expect(again.stdout).toMatch(/0 created, 0 updated, 2 unchanged/);

        const bad = miniApp('apply-bad');
        bad.mappings.Query.orders.find = { status: { $arg: 'state' } };
        const invalid = writeTempFile('setup.yaml', { apps: [miniApp('apply-good'), bad, miniApp('apply-clash', 'applied')] });
        const refused = await runCli(['apply', '-c', configFile, '-f', invalid]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toMatch(/nothing applied/);
        expect(refused.stderr).toMatch(/apps\[1\] \(apply-bad\): mappings\.Query\.orders\.find\.status\.\$arg: the field orders has no argument "state"/);
        expect(refused.stderr).toMatch(/apps: apps "applied" and "apply-clash" are both served at \/graphql\/applied/);
        expect((await apps('/apply-good')).status).toBe(404);
      },
      CLI_TEST_MS,
    );

    it(
      '`outrigger check` validates the apps of the bootstrap file, and acl.bootstrap applies them at start',
      async () => {
        const bad = miniApp('boot-bad');
        bad.mappings.Query.orders.limit = 5000;
        const badBootstrap = writeTempFile('bootstrap.yaml', { apps: [bad] });
        const checked = await runCli(['check', '-c', writeTempFile('outrigger.yaml', { ...stack.raw, acl: { ...stack.raw.acl, bootstrap: badBootstrap } })]);
        expect(checked.code).toBe(1);
        expect(checked.stderr).toMatch(/apps\[0\] \(boot-bad\): mappings\.Query\.orders\.limit must be at most 1000/);

        const bootstrap = writeTempFile('bootstrap.yaml', { apps: [miniApp('booted')] });
        const okCheck = await runCli(['check', '-c', writeTempFile('outrigger.yaml', { ...stack.raw, acl: { ...stack.raw.acl, bootstrap } })]);
        expect(okCheck.code).toBe(0);
        const booted = await startTestOutrigger({ ...stack.raw, acl: { ...stack.raw.acl, bootstrap } });
        try {
          const res = await gql(booted.url, 'booted', '{ orders(limit: 2) { number user { id } } }');
          expect(res.status).toBe(200);
          expect(res.json.data.orders).toEqual([
            { number: 1, user: { id: 'u1' } },
            { number: 2, user: { id: 'u2' } },
          ]);
        } finally {
          await booted.stop();
        }
      },
      CLI_TEST_MS,
    );
  });
});
