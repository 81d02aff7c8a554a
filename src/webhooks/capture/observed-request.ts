/**
 * One observed request while it is served: its body chunks and the response head as they pass
 * (nothing is copied or decoded here), handed to the observer once the response is done.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { ObservedRequest } from '../../chain/observer.js';
import type { RequestScope } from '../../http/scope.js';

/** What a finished observed request is handed to: the observer. */
export interface RequestCompletion {
  complete(observed: ObservedWebhookRequest, scope: RequestScope, completed: boolean): void;
}

/** Body chunks kept by reference up to the cap; past it only counted. */
export class BodyTap {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly cap: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.cap) return;
    const room = this.cap - this.kept;
    const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(piece);
    this.kept += piece.length;
  }

  bytes(): Buffer {
    if (this.chunks.length === 1) return this.chunks[0]!;
    return Buffer.concat(this.chunks, this.kept);
  }
}

export class ObservedWebhookRequest implements ObservedRequest {
  readonly request: BodyTap;
  readonly response: BodyTap;
  statusCode = 0;
  responseHeaders: OutgoingHttpHeaders | null = null;

  constructor(
    private readonly observer: RequestCompletion,
    cap: number,
  ) {
    this.request = new BodyTap(cap);
    this.response = new BodyTap(cap);
  }

  onRequestData(chunk: Buffer): void {
    this.request.add(chunk);
  }

  onResponseHead(statusCode: number, headers: OutgoingHttpHeaders): void {
    this.statusCode = statusCode;
    this.responseHeaders = headers;
  }

  onResponseData(chunk: Buffer): void {
    this.response.add(chunk);
  }

  finish(scope: RequestScope, completed: boolean): void {
    if (this.statusCode === 0) this.statusCode = scope.res.statusCode;
    if (!this.responseHeaders) this.responseHeaders = scope.res.getHeaders();
    try {
      this.observer.complete(this, scope, completed);
    } catch (error) {
      // Observing must never break serving; a bug here loses one event, not the process.
      void error;
    }
  }
}
