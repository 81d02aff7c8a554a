/**
 * What a test's own redis-server receives, seen at Redis (MONITOR), not counted by the client that
 * sends it: "no Redis call per request" measured where it is true or not (issue 54).
 */
import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { FLUSH_EVERY_MS } from '../../../src/limits/usage.js';
import { DEFAULT_CACHE_OPTIONS } from '../../../src/keys/verification-cache.js';
import type { TestRedis } from './redis.js';

export interface SeenCommand {
  /** "lua" for a command a script ran, else the client's address. */
  source: string;
  args: string[];
}

/**
 * Every command Redis runs while it is on (MONITOR over a plain socket: ioredis' monitor mode
 * can misread the first lines under load), with the Lua-issued ones marked by source "lua".
 */
export async function monitor(port: number): Promise<{ seen: SeenCommand[]; stop(): Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  const seen: SeenCommand[] = [];
  let buffer = '';
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    for (let end = buffer.indexOf('\r\n'); end !== -1; end = buffer.indexOf('\r\n')) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (line === '+OK') started();
      const match = /^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (match) seen.push({ source: match[1]!, args: [...match[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!) });
    }
  });
  socket.write('MONITOR\r\n');
  await ready;
  return {
    seen,
    async stop() {
      socket.destroy();
    },
  };
}

/**
 * The commands Redis received while `work` ran, between two ECHO markers the test's client sends
 * (MONITOR streams asynchronously: the end marker showing up means everything before it has),
 * and how long the window lasted.
 */
export async function commandsDuring(redis: TestRedis, work: () => Promise<unknown>): Promise<{ commands: SeenCommand[]; windowMs: number }> {
  const watch = await monitor(redis.port);
  const id = randomUUID();
  const at = (marker: string) => watch.seen.findIndex((c) => c.args[0]?.toLowerCase() === 'echo' && c.args[1] === marker);
  const seenMarker = async (marker: string) => {
    const deadline = Date.now() + 10_000;
    while (at(marker) < 0) {
      if (Date.now() > deadline) throw new Error(`MONITOR did not show the marker ${marker} within 10 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  try {
    await redis.client.echo(`start-${id}`);
    await seenMarker(`start-${id}`);
    const started = performance.now();
    await work();
    const windowMs = performance.now() - started;
    await redis.client.echo(`end-${id}`);
    await seenMarker(`end-${id}`);
    return { commands: watch.seen.slice(at(`start-${id}`) + 1, at(`end-${id}`)), windowMs };
  } finally {
    await watch.stop();
  }
}

/**
 * The reads each replica makes on timers, whatever the traffic: the document stores' and the
 * feature states' polls and the change-bus subscriber's liveness PING (every 2 s each).
 */
export const isPollerRead = (args: string[]): boolean =>
  (args[0]?.toLowerCase() === 'get' && /:version$/.test(args[1] ?? '')) ||
  (args[0]?.toLowerCase() === 'hgetall' && /:features$/.test(args[1] ?? '')) ||
  (args.length === 1 && args[0]?.toLowerCase() === 'ping');

/** SPEC §10's key usage, summed in process and written by a periodic flush (HINCRBY, EXPIRE). */
export const isUsageWrite = (args: string[]): boolean => /^(hincrby|expire)$/i.test(args[0] ?? '') && /:key-usage:/.test(args[1] ?? '');

/**
 * Whether the usage writes in a window are what the periodic flush may send, not one per request:
 * each replica flushes at most once per FLUSH_EVERY_MS (plus one at either edge of the window), and
 * a flush writes one EXPIRE and at most three HINCRBY per key and day. Returns the problem, or null.
 */
export function usageWritesBeyondFlushes(commands: SeenCommand[], windowMs: number, replicas: number): string | null {
  const flushes = replicas * (Math.floor(windowMs / FLUSH_EVERY_MS) + 2);
  const perKey = new Map<string, { expire: number; hincrby: number }>();
  for (const { args } of commands.filter((c) => isUsageWrite(c.args))) {
    const counts = perKey.get(args[1]!) ?? { expire: 0, hincrby: 0 };
    if (args[0]!.toLowerCase() === 'expire') counts.expire++;
    else counts.hincrby++;
    perKey.set(args[1]!, counts);
  }
  for (const [key, { expire, hincrby }] of perKey) {
    if (expire > flushes || hincrby > 3 * flushes)
      return `${key}: ${expire} EXPIRE and ${hincrby} HINCRBY in ${windowMs.toFixed(0)} ms, more than ${flushes} periodic flushes of ${replicas} replica(s) send`;
  }
  return null;
}

/**
 * An API key verification cache's re-read of a key (the lookup script, and the GET and HGET it
 * runs): an entry is re-read in the background once it is `refreshAfterMs` old (5 s), whatever
 * the traffic, so a window longer than that on a loaded machine holds one per period.
 */
export const isKeyRefresh = (c: SeenCommand): boolean =>
  c.source === 'lua'
    ? (/^get$/i.test(c.args[0] ?? '') && /:apikey-hash:/.test(c.args[1] ?? '')) || (/^hget$/i.test(c.args[0] ?? '') && /:apikeys$/.test(c.args[1] ?? ''))
    : /^eval(sha)?$/i.test(c.args[0] ?? '') && c.args.some((a) => /:apikey-hash:/.test(a));

/**
 * Whether a window's key re-reads are the cache's periodic ones, not one per request: per key,
 * the replicas serving the requests re-read it at most once per `refreshAfterMs` (plus one at the
 * window's edge). Returns the problem, or null.
 */
export function keyRefreshesBeyondPeriod(commands: SeenCommand[], windowMs: number, replicas: number): string | null {
  const allowed = replicas * (Math.floor(windowMs / DEFAULT_CACHE_OPTIONS.refreshAfterMs) + 1);
  const perKey = new Map<string, number>();
  for (const c of commands) {
    if (c.source === 'lua' || !isKeyRefresh(c)) continue;
    const key = c.args.find((a) => /:apikey-hash:/.test(a))!;
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
  }
  for (const [key, n] of perKey) if (n > allowed) return `${key}: ${n} lookups in ${windowMs.toFixed(0)} ms, more than the ${allowed} periodic re-reads of ${replicas} replica(s)`;
  return null;
}

/** Has a client run the subscription publish script (its EVALSHA, or EVAL, names the feed and the claims) among `seen`? */
export function publishScriptRan(seen: readonly SeenCommand[], keys: { subscriptionFeed: string; subscribedCollections: string }): boolean {
  return seen.some((c) => c.source !== 'lua' && c.args.includes(keys.subscriptionFeed) && c.args.includes(keys.subscribedCollections));
}

/** Waits until the publish script ran, for at most `ms` (the rows that hold a window open give the old code its chance to publish early). */
export async function publishScriptWithin(seen: readonly SeenCommand[], keys: { subscriptionFeed: string; subscribedCollections: string }, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!publishScriptRan(seen, keys) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}
