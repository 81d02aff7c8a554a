import type { ApiKeyAuthenticator } from '../access/authenticate.js';
import type { Principal } from '../principal/principal.js';
import { OutriggerError, unauthorized } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { hashApiKey, keyFormatProblem } from './key-format.js';
import type { LastUsedThrottle } from './last-used.js';
import type { KeyVerificationCache, Verification } from './verification-cache.js';

const INVALID_TOKEN = { 'www-authenticate': 'Bearer error="invalid_token"' };

/**
 * The last key hashed on a connection, and its hash, kept on the socket: a keep-alive client
 * sends the same key on every request, and SHA-256 of it was about 1 µs of each request's CPU.
 * Only the socket that carried the key holds it, for as long as that connection lives, never a
 * process-wide table of raw keys; and the hash is a pure function of the key, so nothing about
 * the key's validity is remembered here (the verification cache decides that, by hash).
 */
const LAST_KEY = Symbol('outrigger.lastKeyHash');
type KeyCarrier = { [LAST_KEY]?: { token: string; hash: string } };

function keyHashOf(token: string, socket: object | null | undefined): string {
  if (!socket) return hashApiKey(token);
  const carrier = socket as KeyCarrier;
  const last = carrier[LAST_KEY];
  if (last !== undefined && last.token === token) return last.hash;
  const hash = hashApiKey(token);
  carrier[LAST_KEY] = { token, hash };
  return hash;
}

export interface KeyAuthenticatorParts {
  prefix: string;
  /** Limits failed verifications per client IP; a key already verified is never held up by it. */
  failures?: { check(ip: string): void; recordFailure(ip: string): void };
  cache: KeyVerificationCache;
  lastUsed: LastUsedThrottle;
  /** Fire-and-forget write of a key's last use; its promise is never awaited by a request. */
  recordUse(keyId: string, at: number): Promise<void>;
  metrics: Metrics;
  logger: Logger;
  now?: () => number;
}

/**
 * `Authorization: Bearer <prefix>_...` (SPEC §5.4): shape and checksum first (no I/O), then the
 * verification cache (no Redis for a known key), then the key's expiry. Answers a principal
 * running as the key's owner with the key's roles only, or throws 401 / 503.
 */
export function createKeyAuthenticator(parts: KeyAuthenticatorParts): ApiKeyAuthenticator {
  const { prefix, cache, lastUsed, metrics } = parts;
  const now = parts.now ?? Date.now;

  function refuse(reason: 'malformed' | 'unknown' | 'expired', message: string, ip: string): never {
    metrics.authFailures.inc({ scheme: 'apikey', reason });
    parts.failures?.recordFailure(ip);
    throw unauthorized(message, INVALID_TOKEN, 'INVALID_API_KEY');
  }

  function settle(result: Verification, ip: string): Principal {
    if (result.ok) {
      const at = now();
      if (lastUsed.shouldRecord(result.record._id, at))
        parts.recordUse(result.record._id, at).catch((error: unknown) => parts.logger.debug({ keyId: result.record._id, err: String(error) }, 'could not record the last use of an API key'));
      return result.principal;
    }
    switch (result.reason) {
      case 'unknown':
        return refuse('unknown', 'the API key is not valid on this service: it was revoked, or never issued here; issue a new one with POST /keys', ip);
      case 'expired':
        return refuse('expired', `the API key expired at ${new Date(result.expiredAt).toISOString()}; issue a new one with POST /keys`, ip);
      case 'unavailable':
        metrics.authFailures.inc({ scheme: 'apikey', reason: 'unavailable' });
        throw new OutriggerError(503, 'KEY_STORE_UNAVAILABLE', 'the API key cannot be verified right now because Redis is unreachable; retry shortly', { 'retry-after': '5' });
    }
  }

  return {
    authenticate(token: string, scope: { clientIp: string; req?: { socket?: object | null } }): Promise<Principal> | Principal {
      const ip = scope.clientIp;
      const keyHash = keyHashOf(token, scope.req?.socket);
      const known = cache.has(keyHash);
      // A client that has failed too often is refused before any shape check or Redis read.
      if (!known) parts.failures?.check(ip);
      // A key held in the cache was well-formed when stored: only unknown keys need the shape check.
      const problem = known ? null : keyFormatProblem(token, prefix);
      if (problem)
        refuse(
          'malformed',
          problem === 'checksum'
            ? 'the API key is mistyped or truncated: its checksum does not match; copy the whole key'
            : `the bearer token is not a well-formed API key of this service (expected ${prefix}_ followed by at least 49 letters and digits)`,
          ip,
        );
      const result = cache.verify(keyHash);
      return result instanceof Promise ? result.then((r) => settle(r, ip)) : settle(result, ip);
    },
  };
}
