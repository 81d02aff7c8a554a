import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';

/** A client that registered itself (RFC 7591); metadata-document clients are not stored. */
export interface RegisteredClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  client_id_issued_at: number;
  application_type?: 'native' | 'web';
  scope?: string;
}

/** An authorization request between the sign-in and consent pages. */
export interface PendingRequest {
  clientId: string;
  clientName: string;
  /** The client is named by its own metadata document (its client_id URL); false for a self-registered one. */
  verified?: boolean;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  resource: string | null;
  scope: string | null;
  /** Synchronizer token the forms must echo. */
  csrf: string;
  /** SHA-256 of the cookie that binds the request to the browser that started it. */
  browser: string;
  /** Set once the user signed in. */
  user?: { id: string; roles: string[] };
}

/** What a code is redeemed for: decided on the consent page, issued only when the code is redeemed. */
export interface CodeGrant {
  clientId: string;
  clientName: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string | null;
  owner: string;
  kind: 'key' | 'token';
  roles: string[];
  /** Key lifetime in days, for kind key. */
  lifetimeDays: number;
  maxKeys: number;
}

const REQUEST_TTL_MS = 10 * 60_000;
export const CODE_TTL_MS = 60_000;
const USED_CODE_TTL_MS = 10 * 60_000;
const CLIENT_TTL_SECONDS = 30 * 86_400;
const TOKEN_FAILURE_WINDOW_SECONDS = 600;

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Every Redis access of agent sign-in; key names come from store/keys.ts. Codes are stored by hash. */
export class OAuthStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async saveClient(client: RegisteredClient): Promise<void> {
    await this.redis.set(this.keys.oauthClient(client.client_id), JSON.stringify(client), 'EX', CLIENT_TTL_SECONDS);
  }

  async client(clientId: string): Promise<RegisteredClient | null> {
    return parse<RegisteredClient>(await this.redis.get(this.keys.oauthClient(clientId)));
  }

  async saveRequest(id: string, request: PendingRequest): Promise<void> {
    await this.redis.set(this.keys.oauthRequest(id), JSON.stringify(request), 'PX', REQUEST_TTL_MS);
  }

  /** Updates a request without extending its life. */
  async updateRequest(id: string, request: PendingRequest): Promise<void> {
    await this.redis.set(this.keys.oauthRequest(id), JSON.stringify(request), 'KEEPTTL');
  }

  async request(id: string): Promise<PendingRequest | null> {
    return parse<PendingRequest>(await this.redis.get(this.keys.oauthRequest(id)));
  }

  async deleteRequest(id: string): Promise<void> {
    await this.redis.del(this.keys.oauthRequest(id));
  }

  async saveCode(code: string, grant: CodeGrant): Promise<void> {
    await this.redis.set(this.keys.oauthCode(sha256(code)), JSON.stringify(grant), 'PX', CODE_TTL_MS);
  }

  /** Single use: the code is gone once read, whatever the outcome of the request that read it. */
  async takeCode(code: string): Promise<CodeGrant | null> {
    return parse<CodeGrant>(await this.redis.getdel(this.keys.oauthCode(sha256(code))));
  }

  async markCodeUsed(code: string, keyId: string): Promise<void> {
    await this.redis.set(this.keys.oauthCodeUsed(sha256(code)), keyId, 'PX', USED_CODE_TTL_MS);
  }

  /** The key a code already gave, when the code is replayed; null when it was never redeemed. */
  async keyOfUsedCode(code: string): Promise<string | null> {
    return this.redis.getdel(this.keys.oauthCodeUsed(sha256(code)));
  }

  /** Counts a registration from `address` (a client-address bucket) in the current hour; returns the count and the seconds left in the hour. */
  async countRegistration(address: string, now = Date.now()): Promise<{ count: number; retryAfter: number }> {
    const key = this.keys.oauthRegistrationsIp(address, new Date(now).toISOString().slice(0, 13));
    const results = await this.redis.multi().incr(key).expire(key, 3600).exec();
    return { count: Number(results?.[0]?.[1] ?? 0), retryAfter: Math.ceil((3_600_000 - (now % 3_600_000)) / 1000) };
  }

  /** Counts a valid registration from any address in the current UTC day; returns the count and the seconds left in the day. */
  async countRegistrationToday(now = Date.now()): Promise<{ count: number; retryAfter: number }> {
    const key = this.keys.oauthRegistrationsDay(new Date(now).toISOString().slice(0, 10));
    const results = await this.redis.multi().incr(key).expire(key, 86_400).exec();
    return { count: Number(results?.[0]?.[1] ?? 0), retryAfter: Math.ceil((86_400_000 - (now % 86_400_000)) / 1000) };
  }

  /** Counts an authorization request started from `address` in its 10-minute window (the life of a request). */
  countAuthorizeRequest(address: string): Promise<{ count: number; retryAfter: number }> {
    return this.countInRequestWindow(this.keys.oauthAuthorizeIp(address));
  }

  /** Counts an authorization request from any address in the current 10-minute window (`mcp.authorizeRequestsTotal`). */
  countAuthorizeRequestTotal(): Promise<{ count: number; retryAfter: number }> {
    return this.countInRequestWindow(this.keys.oauthAuthorizeTotal);
  }

  /** One more in `key`'s 10-minute window (started by its first count), and the seconds the window has left. */
  private async countInRequestWindow(key: string): Promise<{ count: number; retryAfter: number }> {
    const results = await this.redis
      .multi()
      .incr(key)
      .expire(key, REQUEST_TTL_MS / 1000, 'NX')
      .ttl(key)
      .exec();
    return { count: Number(results?.[0]?.[1] ?? 0), retryAfter: Math.max(1, Number(results?.[2]?.[1] ?? 1)) };
  }

  async tokenFailures(ip: string): Promise<{ count: number; retryAfter: number }> {
    const key = this.keys.oauthTokenFailuresIp(ip);
    const results = await this.redis.pipeline().get(key).ttl(key).exec();
    return { count: Number(results?.[0]?.[1] ?? 0), retryAfter: Math.max(1, Number(results?.[1]?.[1] ?? 1)) };
  }

  async recordTokenFailure(ip: string): Promise<void> {
    const key = this.keys.oauthTokenFailuresIp(ip);
    await this.redis.multi().incr(key).expire(key, TOKEN_FAILURE_WINDOW_SECONDS, 'NX').exec();
  }
}

function parse<T>(text: string | null): T | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
