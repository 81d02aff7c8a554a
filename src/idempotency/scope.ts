import { createHash } from 'node:crypto';
import type { Principal } from '../principal/principal.js';

/**
 * Whose key it is (SPEC §14): one caller's `Idempotency-Key` never meets another's. A principal
 * Outrigger verified is its scope (an API key by its record id, a user by name); a caller it did
 * not verify (credentials passed to the backend) by the SHA-256 of its `Authorization`; an
 * anonymous caller by its address.
 */
export function idempotencyScope(principal: Principal, authorization: string | undefined, address: string): string {
  if (principal.verifiedLocally) {
    if (principal.keyId !== undefined) return `key:${principal.keyId}`;
    if (principal.id !== null) return `user:${principal.id}`;
  }
  if (authorization !== undefined && authorization !== '') return `auth:${createHash('sha256').update(authorization).digest('hex')}`;
  return `addr:${address}`;
}
