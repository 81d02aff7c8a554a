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
