import { createHash } from 'node:crypto';
import { unauthorized } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestTrace } from '../observability/tracing/tracing.js';
import { clientAddressBucket } from '../net/client-address.js';
import { parseBasicAuthorization } from './basic-credentials.js';
import type { BruteForceGuard } from './brute-force-guard.js';
import type { Principal } from '../principal/principal.js';
import type { UserVerifier } from './users/user-verifier.js';

/**
 * Basic sign-in with a cache of successful verifications keyed by a hash of the whole header
 * (never the raw password): a known caller costs one Map lookup, no scrypt and no Redis.
 * Concurrent checks of the same credentials from the same address share one check (single
 * flight): each check reserves an attempt on the failure counters before the password is
 * verified, so without sharing, a client's burst of first-sight requests with its RIGHT password
 * used up the lockout's 10 places and got 429s; and 60 copies of one wrong guess are one guess.
 */
export class BasicAuthenticator {
  private readonly cache = new Map<string, { user: string; principal: Principal; expiresAt: number }>();
  /** Checks under way, keyed by address bucket + a digest of (id, password); an entry lives only as long as its check. */
  private readonly inFlight = new Map<string, Promise<Principal>>();

  // eslint-disable-next-line max-params -- its collaborators held as fields, built in one place (app.ts)
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
    // The address is part of the key: a locked-out address must not ride on another's check.
    const digest = createHash('sha256').update(`${credentials.id.length}:${credentials.id}`).update(credentials.password).digest('base64');
    const flightKey = `${clientAddressBucket(clientIp)} ${digest}`;
    let flight = this.inFlight.get(flightKey);
    if (!flight) {
      flight = this.check(credentials, header, cacheKey, clientIp, trace).finally(() => this.inFlight.delete(flightKey));
      this.inFlight.set(flightKey, flight);
    }
    return flight;
  }

  /** One check: reserve an attempt, verify, give the attempt back on a right password. */
  private async check(credentials: { id: string; password: string }, header: string, cacheKey: string, clientIp: string, trace?: RequestTrace): Promise<Principal> {
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
      this.cache.set(cacheKey, { user: credentials.id, principal, expiresAt: Date.now() + this.cacheMs });
    }
    return principal;
  }

  private refusal(message: string) {
    return unauthorized(message, { 'www-authenticate': `Basic realm="${this.realm}"` });
  }
}
