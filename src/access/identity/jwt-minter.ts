import { createHmac, createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import type { Principal } from '../../principal/principal.js';

export interface JwtSettings {
  secret: string;
  algorithm: 'HS256' | 'HS384' | 'HS512';
  issuer: string;
  audience: string | null;
  ttlSeconds: number;
}

const HASH = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' } as const;
const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/**
 * Mints the JWTs RESTHeart's jwtAuthenticationMechanism accepts (HMAC with the key's UTF-8 bytes,
 * `sub` and `roles` claims, `iss` always checked, `aud` when configured). A token is reused for
 * the same principal until shortly before it expires, so the hot path signs once a minute per
 * caller, not once per request.
 */
export class JwtMinter {
  private readonly cache = new Map<string, { token: string; reuseUntil: number }>();
  private readonly header: string;

  /** A KeyObject, not a Buffer: Node 24's createHmac throws and catches twice to tell a Buffer from a key object (signature.ts). */
  private readonly key: KeyObject;

  constructor(private readonly settings: JwtSettings) {
    this.key = createSecretKey(Buffer.from(settings.secret, 'utf8'));
    this.header = b64url(JSON.stringify({ alg: settings.algorithm, typ: 'JWT' }));
  }

  tokenFor(principal: Principal, now = Date.now()): string {
    const cacheKey = `${principal.id}\u0000${principal.keyId ?? ''}\u0000${principal.roles.join('\u0000')}`;
    const cached = this.cache.get(cacheKey);
    if (cached && cached.reuseUntil > now) return cached.token;
    const token = this.mint(principal, now);
    // Reuse for the first two thirds of the lifetime: the backend never sees a token about to expire.
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(cacheKey, { token, reuseUntil: now + (this.settings.ttlSeconds * 1000 * 2) / 3 });
    return token;
  }

  private mint(principal: Principal, now: number): string {
    const seconds = Math.floor(now / 1000);
    const claims: Record<string, unknown> = {
      sub: principal.id,
      roles: [...principal.roles],
      iss: this.settings.issuer,
      iat: seconds - 5,
      exp: seconds + this.settings.ttlSeconds,
      jti: randomUUID(),
    };
    if (this.settings.audience) claims.aud = this.settings.audience;
    const payload = `${this.header}.${b64url(JSON.stringify(claims))}`;
    const signature = createHmac(HASH[this.settings.algorithm], this.key).update(payload).digest('base64url');
    return `${payload}.${signature}`;
  }
}
