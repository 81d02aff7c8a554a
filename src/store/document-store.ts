import type { Redis } from 'ioredis';
import type { ChangeBus, ChangeKind } from './change-bus.js';

export interface StoredDocument {
  _id: string;
  [field: string]: unknown;
}

/**
 * Documents of one kind (permissions, webhooks, GraphQL apps) in a Redis hash, with an
 * in-process copy every replica keeps fresh: a change message reloads it at once, and a cheap
 * poll of a version counter bounds staleness when a message is lost. `onLoaded` compiles the
 * documents (parse predicates, build schemas) once per load, never per request.
 */
export class DocumentStore<T extends StoredDocument> {
  private docs = new Map<string, T>();
  private version = '';
  private poller: NodeJS.Timeout | null = null;
  private loading: Promise<void> | null = null;
  private reloadQueued = false;
  private readonly loadedListeners: Array<(docs: ReadonlyMap<string, T>) => void> = [];

  // eslint-disable-next-line max-params -- its keys and collaborators held as fields; built by each feature module
  constructor(
    private readonly redis: Redis,
    private readonly bus: ChangeBus,
    readonly kind: ChangeKind,
    private readonly hashKey: string,
    private readonly versionKey: string,
    private readonly pollMs = 2000,
  ) {}

  onLoaded(listener: (docs: ReadonlyMap<string, T>) => void): void {
    this.loadedListeners.push(listener);
    listener(this.docs);
  }

  async start(): Promise<void> {
    this.bus.on((message) => {
      if (message === 'resync' || message.kind === this.kind) void this.reload().catch(() => {});
    });
    await this.reload().catch(() => {});
    this.poller = setInterval(() => void this.pollVersion(), this.pollMs);
    this.poller.unref();
  }

  stop(): void {
    if (this.poller) clearInterval(this.poller);
  }

  all(): ReadonlyMap<string, T> {
    return this.docs;
  }

  get(id: string): T | undefined {
    return this.docs.get(id);
  }

  /** Reads straight from Redis (admin routes answer with what is stored, not a cached copy). */
  async fetch(id: string): Promise<T | undefined> {
    const text = await this.redis.hget(this.hashKey, id);
    return text ? (JSON.parse(text) as T) : undefined;
  }

  async fetchAll(): Promise<T[]> {
    const all = await this.redis.hgetall(this.hashKey);
    return Object.values(all).map((text) => JSON.parse(text) as T);
  }

  async put(doc: T): Promise<{ created: boolean }> {
    const results = await this.redis.multi().hset(this.hashKey, doc._id, JSON.stringify(doc)).incr(this.versionKey).exec();
    const created = Number(results?.[0]?.[1] ?? 0) === 1;
    await this.changed(doc._id);
    return { created };
  }

  /** Writes several documents atomically (setup files are all-or-nothing). */
  async putMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    const multi = this.redis.multi();
    for (const doc of docs) multi.hset(this.hashKey, doc._id, JSON.stringify(doc));
    await multi.incr(this.versionKey).exec();
    await this.changed();
  }

  async delete(id: string): Promise<boolean> {
    const results = await this.redis.multi().hdel(this.hashKey, id).incr(this.versionKey).exec();
    const deleted = Number(results?.[0]?.[1] ?? 0) === 1;
    if (deleted) await this.changed(id);
    return deleted;
  }

  private async changed(id?: string): Promise<void> {
    // The writing replica reloads before answering, so its own next request sees the change.
    await this.reload();
    await this.bus.publish({ kind: this.kind, id });
  }

  /** Coalesces concurrent reload requests into at most one running plus one queued. */
  reload(): Promise<void> {
    if (this.loading) {
      this.reloadQueued = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.reloadQueued = false;
          const [all, version] = await Promise.all([this.redis.hgetall(this.hashKey), this.redis.get(this.versionKey)]);
          const docs = new Map<string, T>();
          for (const [id, text] of Object.entries(all)) {
            try {
              docs.set(id, JSON.parse(text) as T);
            } catch {
              // A hand-edited, unparseable entry must not take the whole kind down; it is skipped.
            }
          }
          this.docs = docs;
          this.version = version ?? '';
          for (const listener of this.loadedListeners) listener(docs);
        } while (this.reloadQueued);
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  private async pollVersion(): Promise<void> {
    try {
      const version = (await this.redis.get(this.versionKey)) ?? '';
      if (version !== this.version) await this.reload();
    } catch {
      // Redis down: keep serving the copy we have; the next poll or resync catches up.
    }
  }
}
