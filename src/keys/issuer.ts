import { randomBytes } from 'node:crypto';
import { conflict } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { ChangeBus } from '../store/change-bus.js';
import { generateApiKey, hashApiKey } from './key-format.js';
import type { KeyRecord } from './key-record.js';
import type { ApiKeyStore } from './key-store.js';

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
      const key = generateApiKey(this.settings.prefix);
      const createdAt = this.now();
      const record: KeyRecord = {
        _id: randomBytes(12).toString('hex'),
        owner: input.owner,
        name: input.name,
        roles: [...input.roles],
        createdAt,
        expiresAt: createdAt + input.lifetimeDays * DAY_MS,
        via: input.via,
        ...(input.client !== undefined ? { client: input.client } : {}),
        serviceId: this.settings.serviceId,
        keyHash: hashApiKey(key),
      };
      const outcome = await this.store.issueWithinLimit(record, input.maxKeys, createdAt);
      if (outcome.issued) {
        this.logger.info({ keyId: record._id, owner: record.owner, roles: record.roles, via: record.via, expiresAt: new Date(record.expiresAt).toISOString() }, 'issued an API key');
        return { record, key };
      }
      if (outcome.reason === 'limit')
        throw conflict(`key limit reached: revoke a key first (you hold ${outcome.activeKeys} unexpired keys; the limit is ${input.maxKeys})`, 'KEY_LIMIT_REACHED');
      // 96 random bits collided with an existing id: draw again.
    }
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
