/**
 * The RESTHeart stand-in (examples/standin-backend, built into dist/) seeded for the GraphQL
 * scenario: db `restheart`, 20 users and 200 orders, each order naming its user in `userId`.
 * Counts every request it receives (backend reads) and keeps the last few for inspection.
 */
import { startStandinBackend } from '../../dist/examples/standin-backend/index.js';
import { serveStandinCounts } from './ipc.mjs';

const users = Array.from({ length: 20 }, (_, i) => ({
  _id: `u${String(i).padStart(2, '0')}`,
  name: `User ${i}`,
  email: `user${i}@example.com`,
  city: ['Oslo', 'Lima', 'Pune', 'Kobe'][i % 4],
}));
const orders = Array.from({ length: 200 }, (_, i) => ({
  _id: { $oid: (0x65a000000000000000000000n + BigInt(i)).toString(16).padStart(24, '0') },
  number: i + 1,
  userId: users[(i * 7) % users.length]._id,
  status: i % 3 === 0 ? 'closed' : 'open',
  total: 10 + ((i * 37) % 500),
  items: [{ sku: `sku-${i % 13}`, qty: 1 + (i % 4) }],
}));

const backend = await startStandinBackend({ data: { restheart: { users, orders } } });
let count = 0;
let last = [];
serveStandinCounts(
  backend,
  (received) => {
    count += received.length;
    last = received.slice(-5).map((r) => `${r.method} ${decodeURIComponent(r.url)}`);
  },
  () => ({ count, last }),
);
