import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';
import { parseKeyRecord, type KeyRecord } from './key-record.js';
import { issueKeyWithinLimit } from '../store/scripts/keys/issue-key-within-limit.js';
import { issueSignInToken } from '../store/scripts/keys/issue-sign-in-token.js';
import { findKeyByHash } from '../store/scripts/keys/find-key-by-hash.js';
import { revokeKey } from '../store/scripts/keys/revoke-key.js';
import { touchKeyLastUsed } from '../store/scripts/keys/touch-key-last-used.js';
import { replaceKeyRecord } from '../store/scripts/keys/replace-key-record.js';
import { rotateKey } from '../store/scripts/keys/rotate-key.js';

/** Expired records stay listed this long (the owner sees that a key expired), then the next issuance of their owner removes them. */
export const EXPIRED_KEPT_MS = 30 * 86_400_000;

export type IssueOutcome = { issued: true; activeKeys: number } | { issued: false; reason: 'limit'; activeKeys: number } | { issued: false; reason: 'id-taken' };

/** A rotation as planned from the old record: the old one in its grace period, the new one. */
export interface RotationPlan {
  old: KeyRecord;
  next: KeyRecord;
}

export type RotateOutcome<P> = { rotated: true; plan: P } | { rotated: false; reason: 'missing' } | { rotated: false; reason: 'grace-limit'; inGrace: number };

export interface StoredKey {
  record: KeyRecord;
  lastUsedAt: number | undefined;
}

/**
 * Every Redis access of the API keys feature. Key names come from store/keys.ts; multi-step
 * changes are Lua scripts named for what they do. Used by the HTTP routes, the verification
 * cache and `outrigger keys`.
 */
export class ApiKeyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async issueWithinLimit(record: KeyRecord, limit: number, now: number): Promise<IssueOutcome> {
    const k = this.keys;
    const result = (await issueKeyWithinLimit.run(
      this.redis,
      [k.apiKeyRecords, k.apiKeyByHash(record.keyHash), k.apiKeysOfOwner(record.owner), k.apiKeyLastUsed],
      [record._id, JSON.stringify(record), now, limit, record.expiresAt, now - EXPIRED_KEPT_MS],
    )) as [number, number];
    if (result[0] === 1) return { issued: true, activeKeys: result[1] };
    if (result[0] === 0) return { issued: false, reason: 'limit', activeKeys: result[1] };
    return { issued: false, reason: 'id-taken' };
  }

  /** False when the id is taken (draw another). */
  async issueToken(record: KeyRecord, now: number): Promise<boolean> {
    const k = this.keys;
    const result = await issueSignInToken.run(
      this.redis,
      [k.apiKeyRecords, k.apiKeyByHash(record.keyHash), k.signInTokensByExpiry, k.apiKeyLastUsed],
      [record._id, JSON.stringify(record), record.expiresAt, now - 86_400_000],
    );
    return Number(result) === 1;
  }

  /** The record a key hash names, or null. One round trip; throws when Redis is unreachable. */
  async findByHash(keyHash: string): Promise<KeyRecord | null> {
    const text = (await findKeyByHash.run(this.redis, [this.keys.apiKeyByHash(keyHash), this.keys.apiKeyRecords], [])) as string | null;
    return parseKeyRecord(text);
  }

  async get(id: string): Promise<StoredKey | null> {
    const [text, lastUsed] = await Promise.all([this.redis.hget(this.keys.apiKeyRecords, id), this.redis.hget(this.keys.apiKeyLastUsed, id)]);
    const record = parseKeyRecord(text);
    return record ? { record, lastUsedAt: lastUsed ? Number(lastUsed) : undefined } : null;
  }

  async listOfOwner(owner: string): Promise<StoredKey[]> {
    const ids = await this.redis.smembers(this.keys.apiKeysOfOwner(owner));
    if (ids.length === 0) return [];
    const [texts, lastUsed] = await Promise.all([this.redis.hmget(this.keys.apiKeyRecords, ...ids), this.redis.hmget(this.keys.apiKeyLastUsed, ...ids)]);
    const out: StoredKey[] = [];
    texts.forEach((text, i) => {
      const record = parseKeyRecord(text);
      if (record && record.owner === owner) out.push({ record, lastUsedAt: lastUsed[i] ? Number(lastUsed[i]) : undefined });
    });
    return out;
  }

  async listAll(): Promise<StoredKey[]> {
    const [all, lastUsed] = await Promise.all([this.redis.hgetall(this.keys.apiKeyRecords), this.redis.hgetall(this.keys.apiKeyLastUsed)]);
    const out: StoredKey[] = [];
    for (const [id, text] of Object.entries(all)) {
      const record = parseKeyRecord(text);
      if (record) out.push({ record, lastUsedAt: lastUsed[id] ? Number(lastUsed[id]) : undefined });
    }
    return out;
  }

  /** Deletes the key (the owner's, when `owner` is given); returns its record, or null when there is no such key. */
  async revoke(id: string, owner?: string): Promise<KeyRecord | null> {
    const record = parseKeyRecord(await this.redis.hget(this.keys.apiKeyRecords, id));
    if (!record || (owner !== undefined && record.owner !== owner)) return null;
    const k = this.keys;
    const deleted = await revokeKey.run(this.redis, [k.apiKeyRecords, k.apiKeyByHash(record.keyHash), k.apiKeysOfOwner(record.owner), k.apiKeyLastUsed], [id, record.keyHash]);
    return Number(deleted) === 1 ? record : null;
  }

  /**
   * Rewrites a key's record with `change` applied, only over the record it read (a revoke or
   * another admin's change in between is retried, never overwritten); null when there is no such key.
   */
  async update(id: string, change: (record: KeyRecord) => KeyRecord): Promise<KeyRecord | null> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const text = await this.redis.hget(this.keys.apiKeyRecords, id);
      const record = parseKeyRecord(text);
      if (!record) return null;
      const next = change(record);
      if (Number(await replaceKeyRecord.run(this.redis, [this.keys.apiKeyRecords], [id, text!, JSON.stringify(next)])) === 1) return next;
    }
    throw new Error(`the key ${id} kept changing while it was being updated`);
  }

  /**
   * Rotates the key `id` of `owner` (SPEC §15): `plan` turns the record read into the old key's
   * grace version and the new key (it may throw to refuse), and the script stores both only over
   * the record read; a change in between, or a new id already taken, plans again.
   */
  async rotate<P extends RotationPlan>(id: string, owner: string, plan: (record: KeyRecord) => P, now: number, graceLimit: number): Promise<RotateOutcome<P>> {
    const k = this.keys;
    for (let attempt = 0; attempt < 5; attempt++) {
      const text = await this.redis.hget(k.apiKeyRecords, id);
      const record = parseKeyRecord(text);
      if (!record || record.owner !== owner || record.kind === 'token') return { rotated: false, reason: 'missing' };
      const p = plan(record);
      const result = (await rotateKey.run(
        this.redis,
        [k.apiKeyRecords, k.apiKeyByHash(record.keyHash), k.apiKeyByHash(p.next.keyHash), k.apiKeysOfOwner(owner)],
        [id, text!, JSON.stringify(p.old), p.old.expiresAt, p.next._id, JSON.stringify(p.next), p.next.expiresAt, now, graceLimit],
      )) as [number, number];
      if (result[0] === 1) return { rotated: true, plan: p };
      if (result[0] === -2) return { rotated: false, reason: 'grace-limit', inGrace: result[1] };
    }
    throw new Error(`the key ${id} kept changing while it was being rotated`);
  }

  async touchLastUsed(id: string, at: number): Promise<void> {
    await touchKeyLastUsed.run(this.redis, [this.keys.apiKeyRecords, this.keys.apiKeyLastUsed], [id, at]);
  }
}
