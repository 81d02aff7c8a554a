/**
 * Shared by the cost-charging rows (issue 53 item 4, SPEC §10 `units: cost`): an app whose user
 * joins its orders, with a mutation answering the user (read back, then joined) and one
 * answering a Boolean, and a subscription to user changes whose selection may join orders.
 * Query `{ user(id) { orders(limit: 90) } }` and mutation `renameUser` with the same selection
 * are both estimated at 91 documents; an event of `userChanged { document { orders(limit: 10) } }`
 * at 11.
 */
export const COST_SCHEMA = /* GraphQL */ `
  type Order {
    _id: String
    userId: String
    n: Int
  }
  type User {
    _id: String
    name: String
    orders(limit: Int = 10): [Order]
  }
  type UserChange {
    op: String
    id: ID
    document: User
  }
  type Query {
    user(id: String!): User
  }
  type Mutation {
    renameUser(id: String!, name: String!): User
    setName(id: String!, name: String!): Boolean
  }
  type Subscription {
    userChanged: UserChange
  }
`;

const users = { db: 'shop', collection: 'users' };

export const COST_MAPPINGS = {
  Query: { user: { ...users, find: { _id: { $arg: 'id' } } } },
  User: { orders: { db: 'shop', collection: 'orders', find: { userId: { $fk: '_id' } }, sort: { n: 1 }, limit: { $arg: 'limit' } } },
  Mutation: {
    renameUser: { ...users, find: { _id: { $arg: 'id' } }, update: { $set: { name: { $arg: 'name' } } } },
    setName: { ...users, find: { _id: { $arg: 'id' } }, update: { $set: { name: { $arg: 'name' } } } },
  },
  Subscription: { userChanged: { ...users, on: ['insert', 'update'] } },
};

export function usersApp(uri: string): Record<string, unknown> {
  return { _id: uri, descriptor: { uri }, schema: COST_SCHEMA, mappings: COST_MAPPINGS };
}

/** Three users; u1 has 100 orders, u2 and u3 have 20 each. */
export function costData() {
  const orders = [
    ...Array.from({ length: 100 }, (_, i) => ({ _id: `o1-${i}`, userId: 'u1', n: i })),
    ...Array.from({ length: 20 }, (_, i) => ({ _id: `o2-${i}`, userId: 'u2', n: i })),
    ...Array.from({ length: 20 }, (_, i) => ({ _id: `o3-${i}`, userId: 'u3', n: i })),
  ];
  return {
    shop: {
      users: [
        { _id: 'u1', name: 'One' },
        { _id: 'u2', name: 'Two' },
        { _id: 'u3', name: 'Three' },
      ],
      orders,
    },
  };
}
