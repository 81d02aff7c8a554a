import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';
import { parseKeyRecord, type KeyRecord } from './key-record.js';
import { LuaScript } from './lua-script.js';

/** Expired records stay listed this long (the owner sees that a key expired), then the next issuance of their owner removes them. */
export const EXPIRED_KEPT_MS = 30 * 86_400_000;

/**
 * Counts the owner's unexpired keys and stores the new one only when that count is below the
 * limit, in one atomic step: two replicas issuing at the limit at once cannot both succeed.
 * On the way it drops set members whose record is gone and records expired long ago.
 * Returns {1, count-after} when issued, {0, count} at the limit, {-1, 0} when the id is taken.
 */
const issueKeyWithinLimit = new LuaScript(
  'issueKeyWithinLimit',
  `
local records, byHash, ofOwner, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, record, now, limit, expiresAt, sweepBefore = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
if redis.call('HEXISTS', records, id) == 1 then return {-1, 0} end
local active = 0
for _, member in ipairs(redis.call('SMEMBERS', ofOwner)) do
  local text = redis.call('HGET', records, member)
  if not text then
    redis.call('SREM', ofOwner, member)
  else
    local memberExpiresAt = tonumber(cjson.decode(text).expiresAt)
    if memberExpiresAt > now then
      active = active + 1
    elseif memberExpiresAt < sweepBefore then
      redis.call('HDEL', records, member)
      redis.call('HDEL', lastUsed, member)
      redis.call('SREM', ofOwner, member)
    end
  end
end
if active >= limit then return {0, active} end
redis.call('HSET', records, id, record)
redis.call('SET', byHash, id, 'PXAT', expiresAt)
redis.call('SADD', ofOwner, id)
return {1, active + 1}
`,
);

/**
 * Stores a user's own sign-in token: like a key (record + hash index, so the same verifier
 * accepts it) but outside the owner's set, so it never counts against the key limit. Tokens
 * that expired over a day ago are swept on the way.
 */
const issueSignInToken = new LuaScript(
  'issueSignInToken',
  `
local records, byHash, byExpiry, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, record, expiresAt, sweepBefore = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', records, id) == 1 then return 0 end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', byExpiry, '-inf', sweepBefore)) do
  redis.call('HDEL', records, member)
  redis.call('HDEL', lastUsed, member)
end
redis.call('ZREMRANGEBYSCORE', byExpiry, '-inf', sweepBefore)
redis.call('HSET', records, id, record)
redis.call('SET', byHash, id, 'PXAT', expiresAt)
redis.call('ZADD', byExpiry, expiresAt, id)
return 1
`,
);

/** The record of a key hash, in one round trip (the hash index holds the record id). */
const findKeyByHash = new LuaScript(
  'findKeyByHash',
  `
local id = redis.call('GET', KEYS[1])
if not id then return false end
return redis.call('HGET', KEYS[2], id)
`,
);

/** Deletes a key and its indexes, if it is still the key the caller read (same hash). */
const revokeKey = new LuaScript(
  'revokeKey',
  `
local records, byHash, ofOwner, lastUsed = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, keyHash = ARGV[1], ARGV[2]
local text = redis.call('HGET', records, id)
if not text or cjson.decode(text).keyHash ~= keyHash then return 0 end
redis.call('HDEL', records, id)
redis.call('HDEL', lastUsed, id)
redis.call('SREM', ofOwner, id)
redis.call('DEL', byHash)
return 1
`,
);

/** Records a use only if newer than the stored one, and never for a key revoked meanwhile. */
const touchKeyLastUsed = new LuaScript(
  'touchKeyLastUsed',
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if current and current >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`,
);

export type IssueOutcome = { issued: true; activeKeys: number } | { issued: false; reason: 'limit'; activeKeys: number } | { issued: false; reason: 'id-taken' };

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

  async touchLastUsed(id: string, at: number): Promise<void> {
    await touchKeyLastUsed.run(this.redis, [this.keys.apiKeyRecords, this.keys.apiKeyLastUsed], [id, at]);
  }
}
