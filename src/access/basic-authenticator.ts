import { createHash } from 'node:crypto';
import { unauthorized } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestTrace } from '../observability/tracing/tracing.js';
import { parseBasicAuthorization } from './basic-credentials.js';
import type { BruteForceGuard } from './brute-force-guard.js';
import type { Principal } from './principal.js';
import type { UserVerifier } from './users/user-verifier.js';

/**
 * Basic sign-in with a cache of successful verifications keyed by a hash of the whole header
 * (never the raw password): a known caller costs one Map lookup, no scrypt and no Redis.
 */
export class BasicAuthenticator {
  private readonly cache = new Map<string, { user: string; principal: Principal; expiresAt: number }>();

  constructor(
    private readonly verifier: UserVerifier,
    private readonly guard: BruteForceGuard,
    private readonly cacheMs: number,
    private readonly realm: string,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  async authenticate(header: string, clientIp: string, trace?: RequestTrace): Promise<Principal> {
    const cacheKey = createHash('sha256').update(header).digest('base64');
    const cached = this.cache.get(cacheKey);
    const now = Date.now();
    if (cached && cached.expiresAt > now) {
      this.guard.recordCachedSuccess(cached.user, clientIp);
      return cached.principal;
    }

    const credentials = parseBasicAuthorization(header);
    if (!credentials) throw this.refusal('the Authorization header is not valid Basic credentials (base64 of id:password)');
    // Counted before it is checked (throws 429 at the limit); given back if the password is right.
    await this.guard.reserve(credentials.id, clientIp);
    let result: Awaited<ReturnType<UserVerifier['verify']>>;
    try {
      result = await this.verifier.verify(credentials.id, credentials.password, header, trace);
    } catch (error) {
      await this.guard.undecided(credentials.id, clientIp).catch((e: Error) => this.log.warn({ err: e.message }, 'brute-force guard: could not give back an attempt'));
      throw error;
    }
    if (!result) {
      this.metrics.authFailures.inc({ scheme: 'basic', reason: 'wrong-credentials' });
      throw this.refusal('wrong user id or password');
    }
    await this.guard.succeeded(credentials.id, clientIp).catch(() => {});
    const principal: Principal = Object.freeze({ id: credentials.id, roles: Object.freeze(result.roles), via: 'basic', verifiedLocally: this.verifier.verifiedLocally });
    if (this.cacheMs > 0) {
      if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(cacheKey, { user: credentials.id, principal, expiresAt: now + this.cacheMs });
    }
    return principal;
  }

  private refusal(message: string) {
    return unauthorized(message, { 'www-authenticate': `Basic realm="${this.realm}"` });
  }
}
