import { randomBytes } from 'node:crypto';
import { conflict } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ChangeBus } from '../store/change-bus.js';
import { generateApiKey, hashApiKey, keyStart } from './key-format.js';
import type { KeyRecord } from './key-record.js';
import type { ApiKeyStore } from './key-store.js';
import { checkRequestedRoles, type KeyPolicy } from './issuing-rules.js';

const DAY_MS = 86_400_000;

export interface IssueKeyInput {
  owner: string;
  name: string;
  roles: readonly string[];
  lifetimeDays: number;
  /** The caller's limit of unexpired keys (SPEC §5.3 step 7). */
  maxKeys: number;
  via: 'api' | 'oauth';
  client?: string;
}

/**
 * Issues and revokes keys (for `POST /keys`, the admin routes, `outrigger keys` and agent
 * sign-in alike): the key is generated here, returned once, and only its hash is stored.
 * Revocation tells every replica through the change bus, so their caches drop the key at once.
 */
export class ApiKeyIssuer {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly bus: ChangeBus,
    private readonly settings: { prefix: string; serviceId: string },
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws 409 when the owner already holds `maxKeys` unexpired keys. */
  async issue(input: IssueKeyInput): Promise<{ record: KeyRecord; key: string }> {
    for (;;) {
      const drawn = this.draw({
        owner: input.owner,
        name: input.name,
        roles: input.roles,
        lifetimeMs: input.lifetimeDays * DAY_MS,
        via: input.via,
        ...(input.client !== undefined ? { client: input.client } : {}),
      });
      const outcome = await this.store.issueWithinLimit(drawn.record, input.maxKeys, drawn.record.createdAt);
      if (outcome.issued) return this.issued(drawn, 'issued an API key');
      if (outcome.reason === 'limit') throw conflict(`key limit reached: revoke a key first (you hold ${outcome.activeKeys} unexpired keys; the limit is ${input.maxKeys})`, 'KEY_LIMIT_REACHED');
      // 96 random bits collided with an existing id: draw again.
    }
  }

  /**
   * A user's own sign-in token (SPEC §5.6): the same format and verification as a key, all the
   * user's roles, a lifetime in minutes, and no limit (it is not counted against the keys).
   */
  async issueToken(input: { owner: string; roles: readonly string[]; lifetimeMs: number; client: string }): Promise<{ record: KeyRecord; key: string }> {
    for (;;) {
      const drawn = this.draw({ ...input, name: `sign-in token for ${input.client}`.slice(0, 100), via: 'oauth', kind: 'token' });
      if (await this.store.issueToken(drawn.record, drawn.record.createdAt)) return this.issued(drawn, 'issued a sign-in token');
    }
  }

  /** A new key and its record (not yet stored). */
  private draw(d: Pick<KeyRecord, 'owner' | 'name' | 'via' | 'client' | 'kind'> & { roles: readonly string[]; lifetimeMs: number }): { record: KeyRecord; key: string } {
    const key = generateApiKey(this.settings.prefix);
    const createdAt = this.now();
    const record: KeyRecord = {
      _id: randomBytes(12).toString('hex'),
      owner: d.owner,
      name: d.name,
      roles: [...d.roles],
      createdAt,
      expiresAt: createdAt + d.lifetimeMs,
      via: d.via,
      ...(d.client !== undefined ? { client: d.client } : {}),
      ...(d.kind !== undefined ? { kind: d.kind } : {}),
      serviceId: this.settings.serviceId,
      keyHash: hashApiKey(key),
      start: keyStart(key, this.settings.prefix),
    };
    return { record, key };
  }

  private issued(drawn: { record: KeyRecord; key: string }, message: string): { record: KeyRecord; key: string } {
    const { record } = drawn;
    this.logger.info(
      { keyId: record._id, owner: record.owner, roles: record.roles, via: record.via, ...(record.kind ? { kind: record.kind } : {}), expiresAt: new Date(record.expiresAt).toISOString() },
      message,
    );
    return drawn;
  }

  /**
   * SPEC §15: a new key in place of the owner's key `id`, the old one working for `graceMs` more
   * (never longer than it would have). The new key keeps the old one's name, roles and per-key
   * limits, and its lifetime, within what the permission that applies allows today; it counts
   * toward the key limit in the old one's place. Null when the owner has no such key.
   */
  async rotate(input: { id: string; owner: string; graceMs: number; policy: KeyPolicy }): Promise<{ record: KeyRecord; key: string; old: KeyRecord } | null> {
    const { id, owner, graceMs, policy } = input;
    const now = this.now();
    const outcome = await this.store.rotate(
      id,
      owner,
      (record) => {
        if (record.replacedBy !== undefined)
          throw conflict(`the key ${JSON.stringify(id)} was already rotated: key ${JSON.stringify(record.replacedBy)} replaced it; rotate that one`, 'KEY_ALREADY_ROTATED');
        if (record.expiresAt <= now)
          throw conflict(`the key ${JSON.stringify(id)} expired at ${new Date(record.expiresAt).toISOString()}; only a working key is rotated: issue a new one with POST /keys`, 'KEY_EXPIRED');
        checkRequestedRoles(policy, record.roles);
        const lifetimeMs = Math.min(record.expiresAt - record.createdAt, policy.maxExpiresInDays * DAY_MS);
        const drawn = this.draw({ owner, name: record.name, roles: record.roles, lifetimeMs, via: 'api' });
        const next: KeyRecord = record.limits ? { ...drawn.record, limits: record.limits } : drawn.record;
        return { old: { ...record, expiresAt: Math.min(record.expiresAt, now + graceMs), replacedBy: next._id }, next, key: drawn.key };
      },
      now,
      policy.maxKeysPerUser,
    );
    if (!outcome.rotated && outcome.reason === 'missing') return null;
    if (!outcome.rotated)
      throw conflict(
        `you already hold ${outcome.inGrace} keys in their grace period after a rotation, the most your keys allow (${policy.maxKeysPerUser}); revoke one of them, or wait until its grace ends`,
        'KEY_GRACE_LIMIT_REACHED',
      );
    const { old, next, key } = outcome.plan;
    // Every replica's verification cache drops the old key now and reads its shorter expiry.
    await this.bus.publish({ kind: 'apikeys', id });
    this.issued({ record: next, key }, 'issued an API key by rotation');
    this.logger.info({ keyId: id, owner, replacedBy: next._id, graceEndsAt: new Date(old.expiresAt).toISOString() }, 'rotated an API key');
    return { record: next, key, old };
  }

  /** Deletes a key (only the owner's when `owner` is given); null when there is no such key. */
  async revoke(id: string, by: { owner?: string; actor: string }): Promise<KeyRecord | null> {
    const record = await this.store.revoke(id, by.owner);
    if (!record) return null;
    await this.bus.publish({ kind: 'apikeys', id });
    this.logger.info({ keyId: id, owner: record.owner, by: by.actor }, 'revoked an API key');
    return record;
  }
}
