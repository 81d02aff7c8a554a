/**
 * The RESTHeart stand-in seeded for the response-cache section (SPEC §12): db `restheart`,
 * collection `docs` with 1,000 documents `d0000`…`d0999`, each `{v: 0}` and ~600 bytes of text.
 * Counts the reads (GET) and the writes it receives, so the bench can say how many backend reads
 * the cache saved.
 */
import { startStandinBackend } from '../../dist/examples/standin-backend/index.js';
import { serveStandinCounts } from './ipc.mjs';

export const DOCS = 1000;
const text = 'lorem ipsum dolor sit amet '.repeat(22);
const docs = Array.from({ length: DOCS }, (_, i) => ({ _id: `d${String(i).padStart(4, '0')}`, v: 0, text }));

const backend = await startStandinBackend({ data: { restheart: { docs } } });
let reads = 0;
let writes = 0;
serveStandinCounts(
  backend,
  (received) => {
    for (const r of received)
      if (r.method === 'GET' || r.method === 'HEAD') reads++;
      else writes++;
  },
  () => ({ reads, writes }),
);
