/**
 * The idempotency records in Redis (SPEC §14): one hash per caller scope and key, claimed,
 * settled and refreshed by the scripts in src/store/scripts/idempotency/ so every replica sees
 * one record, set atomically. A claim is one round trip (a replay's answer comes back in it); a
 * run's record or release is one more; a run's lock is refreshed every third of its life.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';
import { claimIdempotencyRecord } from '../store/scripts/idempotency/claim-idempotency-record.js';
import { settleIdempotencyRecord } from '../store/scripts/idempotency/settle-idempotency-record.js';

export interface RecordedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type Claim =
  /** The first: run it, then `ticket.record(answer)` or `ticket.release()`. */
  | { kind: 'run'; ticket: IdempotencyTicket }
  /** Finished before: answer this, with `Idempotent-Replayed: true`. */
  | { kind: 'replay'; answer: RecordedAnswer }
  /** Still running elsewhere: 409. */
  | { kind: 'in-flight' }
  /** The same key with another request: 422. */
  | { kind: 'mismatch' }
  /** Finished, but its answer was over `maxBodyBytes`: only its status was kept (409). */
  | { kind: 'too-large'; status: number }
  /** Redis could not say: 503, never run unrecorded. `error` is what Redis answered. */
  | { kind: 'unavailable'; error?: unknown };

export interface IdempotencyTicket {
  /** Keeps the answer (or only its status, when its body is over `maxBodyBytes`) for `ttlSeconds`; stops the lock's refresh. */
  record(answer: RecordedAnswer): Promise<void>;
  /** Deletes the record so a retry runs (a 5xx, a timeout, a broken connection); stops the lock's refresh. */
  release(): Promise<void>;
}

export interface IdempotencyStore {
  claim(scope: string, key: string, fingerprint: string): Promise<Claim>;
}

export interface IdempotencyOptions {
  ttlSeconds: number;
  lockSeconds: number;
  maxBodyBytes: number;
}

export interface RedisIdempotencyStore extends IdempotencyStore {
  readonly options: IdempotencyOptions;
  /** Round trips to Redis so far (claims, settles, refreshes), for the bench. */
  readonly roundTrips: number;
}

/** The record's key: the scope and the key hashed, so neither reaches a key name as sent. */
export function recordDigest(scope: string, key: string): string {
  return createHash('sha256').update(scope).update('\u0000').update(key).digest('hex');
}

export function createIdempotencyStore(redis: Redis, keys: Pick<RedisKeys, 'idempotencyRecord'>, options: IdempotencyOptions, onError?: (error: unknown, what: string) => void): RedisIdempotencyStore {
  let roundTrips = 0;
  const settle = (record: string, args: Array<string | Buffer | number>) => {
    roundTrips++;
    return settleIdempotencyRecord.run(redis, [record], args);
  };

  function ticketFor(record: string, ticket: string): IdempotencyTicket {
    let done = false;
    const refreshMs = Math.max(100, Math.floor((options.lockSeconds * 1000) / 3));
    const timer = setInterval(() => {
      settle(record, [ticket, 'refresh', options.lockSeconds * 1000]).catch((error) => onError?.(error, 'refreshing an idempotency lock'));
    }, refreshMs);
    timer.unref();
    const finish = () => {
      if (done) return false;
      done = true;
      clearInterval(timer);
      return true;
    };
    return {
      async record(answer) {
        if (!finish()) return;
        const ttlMs = options.ttlSeconds * 1000;
        if (answer.body.length > options.maxBodyBytes) await settle(record, [ticket, 'big', answer.status, ttlMs]);
        else await settle(record, [ticket, 'record', answer.status, JSON.stringify(answer.headers), answer.body, ttlMs]);
      },
      async release() {
        if (!finish()) return;
        await settle(record, [ticket, 'release']);
      },
    };
  }

  return {
    options,
    get roundTrips() {
      return roundTrips;
    },
    async claim(scope, key, fingerprint) {
      const record = keys.idempotencyRecord(recordDigest(scope, key));
      const ticket = randomBytes(12).toString('base64url');
      let reply: Buffer[];
      try {
        roundTrips++;
        reply = (await claimIdempotencyRecord.runForBuffers(redis, [record], [fingerprint, ticket, options.lockSeconds * 1000])) as Buffer[];
      } catch (error) {
        return { kind: 'unavailable', error };
      }
      return claimOf(reply, () => ticketFor(record, ticket));
    },
  };
}

function claimOf(reply: Buffer[], ticket: () => IdempotencyTicket): Claim {
  switch (reply[0]!.toString()) {
    case 'run':
      return { kind: 'run', ticket: ticket() };
    case 'mismatch':
      return { kind: 'mismatch' };
    case 'in-flight':
      return { kind: 'in-flight' };
    case 'big':
      return { kind: 'too-large', status: Number(reply[1]!.toString()) };
    default:
      return { kind: 'replay', answer: { status: Number(reply[1]!.toString()), headers: JSON.parse(reply[2]!.toString()) as Record<string, string>, body: reply[3] ?? Buffer.alloc(0) } };
  }
}
