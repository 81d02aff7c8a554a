/**
 * How a document change reaches the other replicas (SPEC §3.5, §6.3: within 1 s goal, never later
 * than 20 s guarantee), each mechanism on its own so that neither hides the other (issue 54):
 * the change bus with the version poll too far away to matter, and the version poll with the
 * replica's bus never subscribed. Replicas are DocumentStores on their own production connections
 * (a commands and a subscriber connection each) to a real redis-server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ChangeBus } from '../../../src/store/change-bus.js';
import { createRedisConnections, waitForRedis, type RedisConnections } from '../../../src/store/connections.js';
import { DocumentStore, type StoredDocument } from '../../../src/store/document-store.js';
import { BUS_ONLY_POLL_MS } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

/** SPEC's goal, plus what a loaded 2-core machine may add to a pub/sub round trip (issue 40). */
const GOAL_MS = 1000;
const LOADED_MARGIN_MS = 3000;
/** SPEC's guarantee: no replica serves a stale document longer than this. */
const GUARANTEE_MS = 20_000;

const HASH = 'propagation:docs';
const VERSION = 'propagation:docs:version';
const CHANNEL = 'propagation:changes';

interface Replica {
  store: DocumentStore<StoredDocument>;
  connections: RedisConnections;
}

let redis: TestRedis;
const replicas: Replica[] = [];

beforeAll(async () => {
  redis = await startTestRedis();
});
afterEach(async () => {
  for (const replica of replicas.splice(0)) {
    replica.store.stop();
    await replica.connections.close();
  }
  await redis.client.del(HASH, VERSION);
});
afterAll(() => redis.close());

/** A replica; `subscribe: false` never starts its bus, so it hears nothing another replica publishes. */
async function replica(options: { pollMs?: number; subscribe?: boolean }): Promise<Replica> {
  const connections = createRedisConnections({ url: redis.url, cluster: null, sentinel: null, password: null, tls: false }, `propagation-${replicas.length}`);
  await waitForRedis(connections.commands, 5000);
  const bus = new ChangeBus(connections.commands, connections.subscriber, CHANNEL);
  if (options.subscribe !== false) {
    await waitForRedis(connections.subscriber, 5000);
    await bus.start();
  }
  const store = new DocumentStore<StoredDocument>(connections.commands, bus, 'permissions', HASH, VERSION, options.pollMs);
  await store.start();
  const made = { store, connections };
  replicas.push(made);
  return made;
}

/** Milliseconds from `since` until `check` holds, or throws once `limitMs` has passed. */
async function seenWithin(check: () => boolean, since: number, limitMs: number): Promise<number> {
  while (!check()) {
    if (performance.now() - since > limitMs) throw new Error(`not seen within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - since;
}

describe('the change bus alone (version poll 10 min away)', () => {
  it('carries a put, an update and a delete to every other replica within 1 s (goal)', async () => {
    const writer = await replica({ pollMs: BUS_ONLY_POLL_MS });
    const others = [await replica({ pollMs: BUS_ONLY_POLL_MS }), await replica({ pollMs: BUS_ONLY_POLL_MS })];
    const bound = GOAL_MS + LOADED_MARGIN_MS;
    const seen: number[] = [];
    for (const [change, check] of [
      [() => writer.store.put({ _id: 'a', n: 1 }), (r: Replica) => r.store.get('a')?.n === 1],
      [() => writer.store.put({ _id: 'a', n: 2 }), (r: Replica) => r.store.get('a')?.n === 2],
      [() => writer.store.delete('a'), (r: Replica) => r.store.get('a') === undefined],
    ] as const) {
      const since = performance.now();
      await change();
      // The writing replica reloads before answering: its own next request sees the change.
      expect(check(writer)).toBe(true);
      for (const other of others) seen.push(await seenWithin(() => check(other), since, 2 * bound));
    }
    console.log(`[change bus] every replica saw each change after ${seen.map((ms) => ms.toFixed(0)).join(', ')} ms`);
    for (const ms of seen) expect(ms).toBeLessThan(bound);
  });
});

describe('the version poll alone (the replica never subscribed to the bus)', () => {
  it(
    'brings a change to a replica that hears no message within its 2 s period, well inside the 20 s guarantee',
    async () => {
      const writer = await replica({ pollMs: BUS_ONLY_POLL_MS });
      // The production period (DocumentStore's default): the poll is the bound on a lost message.
      const deaf = await replica({ subscribe: false });
      const POLL_MS = 2000;
      const since = performance.now();
      await writer.store.put({ _id: 'b', n: 1 });
      const ms = await seenWithin(() => deaf.store.get('b')?.n === 1, since, GUARANTEE_MS);
      console.log(`[version poll] the deaf replica saw the change after ${ms.toFixed(0)} ms`);
      expect(ms).toBeLessThan(POLL_MS + LOADED_MARGIN_MS);
      expect(ms).toBeLessThan(GUARANTEE_MS);
    },
    GUARANTEE_MS + 10_000,
  );
});
