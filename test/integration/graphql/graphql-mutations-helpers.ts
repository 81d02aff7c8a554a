/**
 * Shared by the GraphQL mutation tests (integration, adversarial): an app with one mutation per
 * row of SPEC §6.4's table (and each result type), its data, and the permissions that make
 * alice a writer, bob a reader only and carol a reader through a readFilter.
 */
import { expect } from 'vitest';
import { call } from './graphql-helpers.js';

export const MUTATION_SCHEMA = /* GraphQL */ `
  type Order {
    _id: ObjectId
    number: Int
    owner: String
    status: String
    total: Int
    secret: String
    tags: [String]
  }
  input NewOrder {
    number: Int!
    total: Int!
    status: String = "open"
    owner: String
  }
  type Query {
    orders: [Order]
    order(number: Int!): Order
  }
  type Mutation {
    createOrder(number: Int!, total: Int!): Order
    createOrderId(number: Int!, total: Int!): ID
    createOrderFor(owner: String!, number: Int!): Order
    createWithId(id: String!, number: Int!): ID
    insertWhole(input: NewOrder!): Order
    importOrders(orders: [NewOrder!]!): [ID]
    importOrderCount(orders: [NewOrder!]!): Int
    setStatus(id: ID!, status: String!): Order
    touchOwn(id: ID!): Boolean
    tag(id: ID!, tag: String!): Boolean
    closeAll(owner: String!): Int
    closeFor(owner: String): Int
    deleteOrder(id: ID!): Order
    removeOrder(id: ID!): Boolean
    purge(status: String!): Int
    setAnything(id: ID!, changes: BsonDocument): Boolean
    createIntoMissing(number: Int!): ID
    purgeWhere(status: BsonDocument): Int
    insertDoc(doc: BsonDocument!): ID
  }
`;

const orders = { db: 'shop', collection: 'orders' };

export function mutationApp(id = 'writes', uri = 'writes'): Record<string, unknown> {
  return {
    _id: id,
    descriptor: { uri },
    schema: MUTATION_SCHEMA,
    mappings: {
      Query: {
        orders: { ...orders, sort: { number: 1 } },
        order: { ...orders, find: { number: { $arg: 'number' } } },
      },
      Mutation: {
        createOrder: { ...orders, insert: { number: { $arg: 'number' }, total: { $arg: 'total' }, owner: '@user.id', status: 'open', secret: 'hidden' } },
        createOrderId: { ...orders, insert: { number: { $arg: 'number' }, total: { $arg: 'total' }, owner: '@user.id' } },
        createOrderFor: { ...orders, insert: { number: { $arg: 'number' }, owner: { $arg: 'owner' } } },
        createWithId: { ...orders, insert: { _id: { $arg: 'id' }, number: { $arg: 'number' }, owner: '@user.id' } },
        insertWhole: { ...orders, insert: { $arg: 'input' } },
        importOrders: { ...orders, insert: { $arg: 'orders' } },
        importOrderCount: { ...orders, insert: { $arg: 'orders' } },
        setStatus: { ...orders, find: { _id: { $arg: 'id' } }, update: { $set: { status: { $arg: 'status' } } } },
        touchOwn: { ...orders, find: { _id: { $arg: 'id' }, owner: '@user.id' }, update: { $inc: { touched: 1 } } },
        tag: { ...orders, find: { _id: { $arg: 'id' } }, update: { $addToSet: { tags: { $arg: 'tag' } } } },
        closeAll: { ...orders, find: { owner: { $arg: 'owner' }, status: 'open' }, many: true, update: { $set: { status: 'closed' } } },
        closeFor: { ...orders, find: { owner: { $arg: 'owner' } }, many: true, update: { $set: { status: 'closed' } } },
        deleteOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true },
        removeOrder: { ...orders, find: { _id: { $arg: 'id' } }, delete: true },
        purge: { ...orders, find: { status: { $arg: 'status' } }, many: true, delete: true },
        setAnything: { ...orders, find: { _id: { $arg: 'id' } }, update: { $set: { $arg: 'changes' } } },
        purgeWhere: { ...orders, find: { status: { $arg: 'status' } }, many: true, delete: true },
        insertDoc: { ...orders, insert: { $arg: 'doc' } },
        createIntoMissing: { db: 'shop', collection: 'nowhere', insert: { number: { $arg: 'number' } } },
      },
    },
  };
}

export const hex = (n: number) => n.toString(16).padStart(24, '0');

/** Ten orders: 1..5 alice's (open), 6..10 bob's (open for even numbers). */
export function mutationData() {
  const list = Array.from({ length: 10 }, (_, i) => ({
    _id: { $oid: hex(i + 1) },
    number: i + 1,
    owner: i < 5 ? 'alice' : 'bob',
    status: i < 5 || i % 2 === 1 ? 'open' : 'closed',
    total: (i + 1) * 10,
    secret: `secret-${i + 1}`,
  }));
  return { shop: { orders: list, products: [] } };
}

/** alice writes orders and reads her own (secret hidden); bob only reads; carol reads and writes under a readFilter. */
export async function putMutationPermissions(base: string, auth: string): Promise<void> {
  const put = async (id: string, doc: unknown) => expect((await call(base, `/_admin/acl/${id}`, { method: 'PUT', auth, body: doc })).status).toBe(201);
  await put('graphql', { predicate: 'path-prefix(/graphql/writes)', roles: ['writer', 'reader', 'filtered'], priority: 1 });
  await put('read-orders', {
    predicate: 'method(GET) and path-prefix(/shop/orders)',
    roles: ['writer', 'reader'],
    priority: 10,
    mongo: { readFilter: { owner: '@user.id' }, projectResponse: { secret: 0 } },
  });
  await put('write-orders', { predicate: '(method(POST) or method(PATCH) or method(DELETE)) and path-prefix(/shop)', roles: ['writer'], priority: 5 });
  await put('filtered-orders', { predicate: 'path-prefix(/shop/orders)', roles: ['filtered'], priority: 5, mongo: { readFilter: { owner: '@user.id' } } });
  await put('keys', { predicate: 'path-prefix(/keys)', roles: ['writer'], priority: 1, apiKeys: { roles: ['writer', 'reader'] } });
}
