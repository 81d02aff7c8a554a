/**
 * What the Outrigger scenarios are made of: setup files (permissions, webhooks, the GraphQL app)
 * and the GraphQL query. Kept apart from run.mjs so README.md can point at one place.
 */

/** Path of every pass-through request; the upstream answers 1 KiB of JSON on any path. */
export const PASS_PATH = '/data/item';

/** Lets users (role `user`, from the upstream's /roles) issue keys with role `reader`. */
export const KEYS_PERMISSION = {
  _id: 'bench-issue-keys',
  roles: ['user'],
  predicate: 'path-prefix(/keys)',
  priority: 10,
  apiKeys: { roles: ['reader'], 'max-keys-per-user': 10 },
};

/** Used by `acl.mode: enforce` scenarios: GET on /data for readers and users. */
export const READ_PERMISSION = {
  _id: 'bench-read-data',
  roles: ['reader', 'user'],
  predicate: 'method(GET) and path-prefix(/data)',
  priority: 10,
};

/** 20 webhooks of realistic shapes, none of which matches `GET /data/item` → 200. */
export function quietWebhooks(receiverUrl) {
  const shapes = [
    (i) => `method(POST) and path-prefix(/orders/${i})`,
    (i) => `path-template('/shop/{id}/items/${i}')`,
    (i) => `regex(pattern='^/reports/${i}/[0-9]+', value=%U)`,
    (i) => `equals(%s, 5${String(i).padStart(2, '0')}) and path-prefix(/data)`,
    (i) => `method(DELETE) and path-prefix(/data/${i})`,
  ];
  return Array.from({ length: 20 }, (_, i) => ({
    _id: `quiet-${String(i).padStart(2, '0')}`,
    name: `never fires ${i}`,
    type: 'http',
    url: `${receiverUrl}/quiet/${i}`,
    condition: shapes[i % shapes.length](i),
  }));
}

/** One webhook that matches every pass-through request. */
export function matchingWebhook(receiverUrl) {
  return { _id: 'tee', name: 'every GET of /data', type: 'http', url: `${receiverUrl}/hook`, condition: `method(GET) and path-prefix(/data)` };
}

/**
 * The Outrigger pass-through configurations (README: a, b, c, c+, d, e): what each is started
 * with and the credentials its requests carry (`key`: an API key issued at start).
 */
export function passThroughScenarios({ receiverUrl, upstreamUrl }) {
  const keySetup = { permissions: [KEYS_PERMISSION] };
  return {
    a: { label: 'Outrigger (a) no auth (acl own-routes)', auth: 'none' },
    b: { label: 'Outrigger (b) Basic, verified by the upstream, cached', auth: 'basic' },
    c: { label: 'Outrigger (c) API key (Bearer)', auth: 'key', setup: keySetup },
    cacl: {
      label: 'Outrigger (c+) API key + acl enforce + JWT identity',
      auth: 'key',
      setup: { permissions: [KEYS_PERMISSION, READ_PERMISSION] },
      config: { acl: { mode: 'enforce' }, upstream: { url: upstreamUrl, identity: { mode: 'jwt', jwt: { secret: 'bench-secret-bench-secret-bench-secret-0123' } } } },
    },
    d: { label: 'Outrigger (d) API key + 20 webhooks, none match', auth: 'key', setup: { ...keySetup, webhooks: quietWebhooks(receiverUrl) } },
    // SPEC §10 (issue 35): (c) with one `by: key` policy that never refuses here (10 million a
    // minute: a slice is 500,000 units), so the row shows what counting and leasing cost.
    climit: {
      label: 'Outrigger (c-limit) API key + one by: key rate limit',
      auth: 'key',
      setup: keySetup,
      config: { limits: { policies: [{ name: 'per-key', by: 'key', limit: 10_000_000, window: '60s' }] } },
    },
    // SPEC §12 (issue 47): (c) with response-cache rules that never match the measured read, so
    // the row shows what deciding "no rule" costs on every pass-through request.
    cnocache: {
      label: 'Outrigger (c-nocache) API key + 3 cache rules, none matching',
      auth: 'key',
      setup: keySetup,
      config: {
        cache: {
          rules: [
            { when: 'method(GET) and path-prefix(/restheart/orders)', maxAgeSeconds: 60 },
            { when: 'method(GET) and path-prefix(/restheart/users)', maxAgeSeconds: 60 },
            { when: 'method(GET) and path-prefix(/restheart/products)', maxAgeSeconds: 60 },
          ],
        },
      },
    },
    e: {
      label: 'Outrigger (e) API key + 1 matching webhook → Redis stream',
      auth: 'key',
      setup: { ...keySetup, webhooks: [matchingWebhook(receiverUrl)] },
      config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'], streamMaxLength: 1000 } },
    },
  };
}

export const GRAPHQL_QUERY = '{ orders(limit: 100) { number total status user { id name city } } }';

/**
 * The nested shape (issue 39): three levels, orders → their buyer (a union member) → the buyer's
 * three most recent orders. Three backend reads: the orders, the buyers (one `$in`), their orders
 * (one `$in`, split back per buyer).
 */
export const GRAPHQL_NESTED_QUERY =
  '{ orders(limit: 100) { number total status buyer { __typename ... on User { id name city recentOrders(limit: 3) { number total status } } ... on Guest { id } } } }';

/** The shapes the GraphQL phase measures, in the order the tables show them. */
export const GRAPHQL_SHAPES = [
  { id: 'flat', query: GRAPHQL_QUERY, what: '100 orders, each with its user' },
  { id: 'nested', query: GRAPHQL_NESTED_QUERY, what: "100 orders → their buyer (union `User | Guest`) → the buyer's 3 most recent orders" },
];

/** The Outrigger app serving both shapes over the stand-in's `restheart.orders` / `restheart.users`. */
export const GRAPHQL_APP = {
  _id: 'bench',
  descriptor: { uri: 'bench' },
  schema:
    'type User { id: String, name: String, city: String, recentOrders(limit: Int = 3): [Order] } ' +
    'type Guest { id: String } ' +
    'union Buyer = User | Guest ' +
    'type Order { number: Int, total: Int, status: String, user: User, buyer: Buyer } ' +
    'type Query { orders(limit: Int = 100): [Order] }',
  mappings: {
    User: { id: '_id', recentOrders: { collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { number: -1 }, limit: { $arg: 'limit' } } },
    Guest: { id: '_id' },
    Buyer: { $typeResolver: { User: 'field-exists(city)', Guest: 'not field-exists(city)' } },
    Order: { user: { collection: 'users', find: { _id: { $fk: 'userId' } } }, buyer: { collection: 'users', find: { _id: { $fk: 'userId' } } } },
    Query: { orders: { collection: 'orders', sort: { number: 1 }, limit: { $arg: 'limit' } } },
  },
};

/**
 * The API key's role may query the app, and may read the two collections: with
 * `graphql.backend.auth: caller` and `acl.mode: enforce`, every backend read is decided by the
 * ACL as the equivalent REST GET from the same caller (the production path, issue 39).
 */
export const GRAPHQL_PERMISSIONS = [
  { _id: 'bench-graphql', roles: ['reader'], predicate: 'path-prefix(/graphql/bench)', priority: 10 },
  { _id: 'bench-graphql-reads', roles: ['reader'], predicate: 'method(GET) and path-prefix(/restheart)', priority: 10 },
];

/** Anyone may query the app (overhead.mjs: neither side authenticates; the reads use no credentials). */
export const GRAPHQL_PERMISSION = { _id: 'bench-graphql-anyone', roles: ['$unauthenticated'], predicate: 'path-prefix(/graphql/bench)', priority: 10 };
