/**
 * `Cache-Status` (RFC 9211), serialized as the Structured Field list it is (RFC 9651) by
 * `structured-headers`: one member, the cache's name, with the parameters that say what it did.
 */
import { serializeList, Token } from 'structured-headers';

const NAME = new Token('Outrigger');

/** A hit: `Outrigger; hit; ttl=<seconds of freshness left>`. */
export function hitStatus(ttlSeconds: number): string {
  return serializeList([
    [
      NAME,
      new Map<string, boolean | number>([
        ['hit', true],
        ['ttl', Math.trunc(ttlSeconds)],
      ]),
    ],
  ]);
}

/** Why the backend was asked (RFC 9211 §2.2): no entry, a stale one, the client asked, or the cache was not used. */
export type Forward = 'miss' | 'stale' | 'request' | 'bypass' | 'uri-miss' | 'vary-miss';

/** Forwarded: `Outrigger; fwd=miss; stored` (and `fwd-status` when the backend's status was not what the client got). */
export function forwardStatus(fwd: Forward, stored: boolean, fwdStatus?: number): string {
  const params = new Map<string, boolean | number | Token>([['fwd', new Token(fwd)]]);
  if (fwdStatus !== undefined) params.set('fwd-status', fwdStatus);
  if (stored) params.set('stored', true);
  return serializeList([[NAME, params]]);
}
