import { describe, expect, it } from 'vitest';
import { createKeyAuthenticator } from '../../../src/keys/key-authenticator.js';
import { generateApiKey, hashApiKey } from '../../../src/keys/key-format.js';
import { LastUsedThrottle } from '../../../src/keys/last-used.js';
import type { KeyVerificationCache, Verification } from '../../../src/keys/verification-cache.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { createLogger } from '../../../src/observability/logger.js';

/** A cache that knows one key by hash and records every hash it is asked about. */
function cacheKnowing(knownHash: string) {
  const asked: string[] = [];
  const cache = {
    has: (hash: string) => hash === knownHash,
    verify: (hash: string): Verification => {
      asked.push(hash);
      return hash === knownHash
        ? { ok: true, record: { _id: 'k1', owner: 'alice', roles: ['reader'], expiresAt: Date.now() + 60_000 } as never, principal: { id: 'alice', roles: ['reader'], via: 'apikey' } as never }
        : { ok: false, reason: 'unknown' };
    },
  } as unknown as KeyVerificationCache;
  return { cache, asked };
}

describe('key authenticator: the per-connection key hash', () => {
  const good = generateApiKey('rig');
  const other = generateApiKey('rig');

  function authenticator(knownHash: string) {
    const { cache, asked } = cacheKnowing(knownHash);
    const auth = createKeyAuthenticator({
      prefix: 'rig',
      cache,
      lastUsed: new LastUsedThrottle(),
      recordUse: async () => {},
      metrics: createMetrics(),
      logger: createLogger({ level: 'silent' }),
    });
    return { auth, asked };
  }

  it('asks the cache about the hash of the key each request carries, when keys change on one connection', () => {
    const { auth, asked } = authenticator(hashApiKey(good));
    const socket = {};
    const scope = { clientIp: '127.0.0.1', req: { socket } } as never;
    expect(auth.authenticate(good, scope)).toMatchObject({ id: 'alice' });
    expect(() => auth.authenticate(other, scope)).toThrow(/not valid on this service/);
    expect(auth.authenticate(good, scope)).toMatchObject({ id: 'alice' });
    expect(asked).toEqual([hashApiKey(good), hashApiKey(other), hashApiKey(good)]);
  });

  it('never answers one connection with the hash remembered on another', () => {
    const { auth, asked } = authenticator(hashApiKey(good));
    const connection = () => ({ clientIp: '127.0.0.1', req: { socket: {} } }) as never;
    auth.authenticate(good, connection());
    expect(() => auth.authenticate(other, connection())).toThrow(/not valid/);
    expect(asked).toEqual([hashApiKey(good), hashApiKey(other)]);
  });
});

/** A failure bound kept in memory, as KeyFailureGuard keeps its peek: `check` throws 429 once `max` failures were recorded for the address. */
function failureBound(max: number) {
  const counts = new Map<string, number>();
  return {
    counts,
    check(ip: string) {
      if ((counts.get(ip) ?? 0) >= max) throw Object.assign(new Error('too many failed API key verifications'), { status: 429 });
    },
    recordFailure(ip: string) {
      counts.set(ip, (counts.get(ip) ?? 0) + 1);
    },
  };
}

describe('key authenticator: the brute-force bound and the last use', () => {
  const good = generateApiKey('rig');
  const scope = (ip: string) => ({ clientIp: ip, req: { socket: {} } }) as never;

  function authenticator(max: number, now = () => 1_000_000) {
    const { cache, asked } = cacheKnowing(hashApiKey(good));
    const failures = failureBound(max);
    const used: Array<[string, number]> = [];
    const auth = createKeyAuthenticator({
      prefix: 'rig',
      cache,
      failures,
      lastUsed: new LastUsedThrottle(60_000),
      recordUse: async (keyId, at) => void used.push([keyId, at]),
      metrics: createMetrics(),
      logger: createLogger({ level: 'silent' }),
      now,
    });
    return { auth, asked, failures, used };
  }

  it('refuses an address past its bound before the cache is asked about another unknown key', () => {
    const { auth, asked, failures } = authenticator(3);
    for (let i = 0; i < 3; i++) expect(() => auth.authenticate(generateApiKey('rig'), scope('203.0.113.7'))).toThrow(/not valid on this service/);
    expect(asked).toHaveLength(3);
    expect(failures.counts.get('203.0.113.7')).toBe(3);
    // The fourth unknown, well-formed key: 429 with no verification (no Redis read behind it).
    expect(() => auth.authenticate(generateApiKey('rig'), scope('203.0.113.7'))).toThrow(expect.objectContaining({ status: 429 }));
    expect(asked).toHaveLength(3);
    // Another address is not held up by the first one's failures.
    expect(() => auth.authenticate(generateApiKey('rig'), scope('203.0.113.8'))).toThrow(/not valid on this service/);
    expect(asked).toHaveLength(4);
  });

  it('counts malformed and mistyped keys as failures, and refuses them once the bound is reached without checking their shape', () => {
    const { auth, failures } = authenticator(2);
    expect(() => auth.authenticate('rig_short', scope('198.51.100.1'))).toThrow(/not a well-formed API key/);
    const mistyped = good.slice(0, -1) + (good.endsWith('a') ? 'b' : 'a');
    expect(() => auth.authenticate(mistyped, scope('198.51.100.1'))).toThrow(/checksum/);
    expect(failures.counts.get('198.51.100.1')).toBe(2);
    expect(() => auth.authenticate('rig_short', scope('198.51.100.1'))).toThrow(expect.objectContaining({ status: 429 }));
  });

  it('never holds up a key it already knows, whatever its address has failed', () => {
    const { auth, asked } = authenticator(1);
    expect(() => auth.authenticate(generateApiKey('rig'), scope('192.0.2.9'))).toThrow(/not valid/);
    expect(auth.authenticate(good, scope('192.0.2.9'))).toMatchObject({ id: 'alice' });
    expect(asked).toHaveLength(2);
  });

  it('records a verified key’s last use once per interval, and never a refused key’s', () => {
    let at = 1_000_000;
    const { auth, used } = authenticator(100, () => at);
    auth.authenticate(good, scope('192.0.2.1'));
    at += 30_000;
    auth.authenticate(good, scope('192.0.2.1'));
    expect(used).toEqual([['k1', 1_000_000]]);
    at += 30_000;
    auth.authenticate(good, scope('192.0.2.1'));
    expect(used).toEqual([
      ['k1', 1_000_000],
      ['k1', 1_060_000],
    ]);
    expect(() => auth.authenticate(generateApiKey('rig'), scope('192.0.2.1'))).toThrow(/not valid/);
    expect(used).toHaveLength(2);
  });
});
