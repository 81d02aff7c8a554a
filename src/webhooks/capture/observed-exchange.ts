/**
 * What a webhook condition is evaluated on once the response is complete: the request's
 * exchange, plus the status, response headers, sizes and bodies the observed request kept.
 */
import type { Exchange, ExchangeTls, ExchangeUser } from '../../condition/index.js';
import type { ObservedWebhookRequest } from './observed-request.js';

/** The request's exchange plus what is known once the response is complete. */
export class ObservedExchange implements Exchange {
  conditionView: unknown = undefined;
  private parsedBody: unknown;
  private bodyRead = false;

  constructor(
    private readonly base: Exchange,
    private readonly observed: ObservedWebhookRequest,
  ) {}

  get method(): string {
    return this.base.method;
  }
  get path(): string {
    return this.base.path;
  }
  get rawQuery(): string {
    return this.base.rawQuery;
  }
  requestHeader(name: string): string | undefined {
    return this.base.requestHeader(name);
  }
  requestHeaderValues(name: string): readonly string[] | undefined {
    return this.base.requestHeaderValues?.(name);
  }
  get secure(): boolean {
    return this.base.secure;
  }
  get remoteIp(): string {
    return this.base.remoteIp;
  }
  get localIp(): string | undefined {
    return this.base.localIp;
  }
  get localPort(): number {
    return this.base.localPort;
  }
  get host(): string | undefined {
    return this.base.host;
  }
  get protocol(): string {
    return this.base.protocol;
  }
  get user(): ExchangeUser | undefined {
    return this.base.user;
  }
  get authenticationType(): string | undefined {
    return this.base.authenticationType;
  }
  get startTime(): number | undefined {
    return this.base.startTime;
  }
  get tls(): ExchangeTls | undefined {
    return this.base.tls;
  }
  get statusCode(): number {
    return this.observed.statusCode;
  }
  responseHeader(name: string): string | undefined {
    return this.responseHeaderValues(name)?.[0];
  }
  responseHeaderValues(name: string): readonly string[] | undefined {
    const value = this.observed.responseHeaders?.[name];
    if (value === undefined) return undefined;
    return Array.isArray(value) ? value.map(String) : [String(value)];
  }
  get bytesRead(): number {
    return this.observed.request.total;
  }
  get bytesSent(): number {
    return this.observed.response.total;
  }
  get responseTimeMs(): number | undefined {
    const start = this.base.startTime;
    return start === undefined ? undefined : Math.max(0, Date.now() - start);
  }
  requestBody(): unknown {
    if (!this.bodyRead) {
      this.bodyRead = true;
      const fromBase = this.base.requestBody?.();
      if (fromBase !== undefined) this.parsedBody = fromBase;
      else if (this.observed.request.total > 0) {
        const bytes = this.observed.request.bytes();
        // A body cut at the capture cap is not JSON: bson-request-* predicates see no body then.
        if (bytes.length === this.observed.request.total) {
          try {
            this.parsedBody = JSON.parse(bytes.toString('utf8'));
          } catch {
            this.parsedBody = undefined;
          }
        }
      }
    }
    return this.parsedBody;
  }
  storedResponse(): string | undefined {
    if (this.observed.response.total === 0) return undefined;
    return this.observed.response.bytes().toString('utf8');
  }
}
