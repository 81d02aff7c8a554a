/**
 * The quickstart's dataset: db `restheart` with `users`, `orders` and `products`, shaped like what
 * RESTHeart returns (ObjectId `_id`s and `{"$date": ms}` dates on orders), plus the Basic users
 * the backend knows. Exported so a demo command or an end-to-end test can reuse it.
 */
import type { StandinOptions } from './index.js';

const day = (iso: string) => ({ $date: Date.parse(`${iso}T09:00:00Z`) });
const oid = (n: number) => ({ $oid: `66a1f0c2e4b0a1b2c3d4e${String(n).padStart(3, '0')}` });

export const demoUsers: NonNullable<StandinOptions['users']> = [
  { id: 'alice', password: 'alice-password', roles: ['user'] },
  { id: 'bob', password: 'bob-password', roles: ['user'] },
  { id: 'carol', password: 'carol-password', roles: ['user', 'auditor'] },
  { id: 'admin', password: 'admin-password', roles: ['root'] },
];

export const demoData: NonNullable<StandinOptions['data']> = {
  restheart: {
    users: [
      { _id: 'alice', name: 'Alice Rossi', email: 'alice@example.com', city: 'Rome', plan: 'pro' },
      { _id: 'bob', name: 'Bob Bianchi', email: 'bob@example.com', city: 'Milan', plan: 'free' },
      { _id: 'carol', name: 'Carol Verdi', email: 'carol@example.com', city: 'Turin', plan: 'pro' },
    ],
    products: [
      { _id: 'p-espresso', name: 'Espresso beans 1 kg', price: 24.5, tags: ['coffee'], stock: 40 },
      { _id: 'p-moka', name: 'Moka pot, 6 cups', price: 39, tags: ['coffee', 'kitchen'], stock: 12 },
      { _id: 'p-grinder', name: 'Burr grinder', price: 129, tags: ['coffee', 'kitchen'], stock: 5 },
      { _id: 'p-mug', name: 'Ceramic mug', price: 9.9, tags: ['kitchen'], stock: 200 },
    ],
    orders: [
      {
        _id: oid(1),
        userId: 'alice',
        status: 'delivered',
        total: 63.5,
        createdAt: day('2024-05-02'),
        items: [
          { productId: 'p-espresso', qty: 1 },
          { productId: 'p-moka', qty: 1 },
        ],
      },
      { _id: oid(2), userId: 'alice', status: 'shipped', total: 129, createdAt: day('2024-06-11'), items: [{ productId: 'p-grinder', qty: 1 }] },
      { _id: oid(3), userId: 'bob', status: 'pending', total: 19.8, createdAt: day('2024-06-20'), items: [{ productId: 'p-mug', qty: 2 }] },
      { _id: oid(4), userId: 'carol', status: 'delivered', total: 49, createdAt: day('2024-04-15'), items: [{ productId: 'p-espresso', qty: 2 }] },
      { _id: oid(5), userId: 'bob', status: 'cancelled', total: 39, createdAt: day('2024-03-30'), items: [{ productId: 'p-moka', qty: 1 }] },
    ],
  },
};
