/**
 * Proxied REST writes as changes (SPEC §6.5): a `RequestObserver` beside the webhooks' one. Its
 * `begin` is the whole cost on the pass-through for a collection nobody subscribes to: a method
 * check, a match of the path against `graphql.backend.collectionPath` for writes, and one Set
 * lookup. Only for a subscribed collection does it keep the response head (status, `Location`)
 * and, for a bulk insert, the answer's links; when the response is complete the changes go to the
 * feed, which writes them to Redis off the request path.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { ObservedRequest, RequestObserver } from '../../http/observe.js';
import type { RequestScope } from '../../http/scope.js';
import { changesOf, isWriteMethod, type Change, type CollectionTarget } from './change.js';

/** Bulk insert answers kept up to this size for their links; a larger one publishes nothing. */
const BULK_ANSWER_BYTES = 1024 * 1024;

export function restWritesObserver(
  match: (path: string) => CollectionTarget | undefined,
  wants: (db: string, collection: string) => boolean,
  publish: (changes: Change[]) => void,
  /** Does any replica subscribe to anything? When not, a write costs a method check and this. */
  anyWanted: () => boolean = () => true,
): RequestObserver {
  return {
    begin(scope: RequestScope): ObservedRequest | null {
      if (!isWriteMethod(scope.method) || scope.routeKind !== 'proxy' || !anyWanted()) return null;
      const target = match(scope.path);
      if (!target || !wants(target.db, target.collection)) return null;
      return new ObservedWrite(target, publish);
    },
  };
}

class ObservedWrite implements ObservedRequest {
  private status = 0;
  private location: string | undefined;
  private bulk: boolean | undefined;
  private readonly answer: Buffer[] = [];
  private answerBytes = 0;

  constructor(
    private readonly target: CollectionTarget,
    private readonly publish: (changes: Change[]) => void,
  ) {}

  onRequestData(chunk: Buffer): void {
    if (this.bulk !== undefined) return;
    for (const byte of chunk) {
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
      this.bulk = byte === 0x5b; // '['
      return;
    }
  }

  onResponseHead(statusCode: number, headers: OutgoingHttpHeaders): void {
    this.status = statusCode;
    const location = headers.location;
    this.location = typeof location === 'string' ? location : undefined;
  }

  onResponseData(chunk: Buffer): void {
    if (!this.bulk || this.target.segment !== undefined || this.answerBytes > BULK_ANSWER_BYTES) return;
    this.answer.push(chunk);
    this.answerBytes += chunk.length;
  }

  finish(scope: RequestScope, completed: boolean): void {
    if (!completed) return;
    try {
      const changes = changesOf(this.target, {
        method: scope.method,
        path: scope.path,
        query: scope.rawQuery,
        status: this.status || scope.res.statusCode,
        location: this.location,
        bulk: this.bulk === true,
        responseText: () => (this.answerBytes > BULK_ANSWER_BYTES ? undefined : Buffer.concat(this.answer).toString('utf8')),
      });
      this.publish(changes);
    } catch {
      // Observing never breaks serving.
    }
  }
}
