/**
 * A cached answer sent to one caller (SPEC §12): the backend's stored answer through the same
 * filters a forwarded one crosses (hop-by-hop headers, the plan's header filter, CORS), the
 * caller's own `projectResponse` applied to it, `Age` and `Cache-Status`, the request id and
 * rate-limit headers, the observers told (webhooks see hits as they see forwarded answers).
 */
import type { CacheEntry } from '../../cache/response-cache.js';
import { etagMatches } from '../../cache/freshness.js';
import { OutriggerError } from '../../errors.js';
import { clientResponseHeaders } from '../../proxy/headers.js';
import type { ChainRequest } from '../request.js';
import { ANSWERED } from '../stage.js';
import { corsResponseFilter } from './cors.js';

/** Writes the answer; throws (before anything is sent) when the caller's projection cannot be applied. */
export function serveEntry(request: ChainRequest, entry: CacheEntry, cacheStatus: string): typeof ANSWERED {
  const { res, plan } = request;
  if (res.destroyed) return ANSWERED;
  const filter = request.crossOrigin ? corsResponseFilter(plan?.filterResponseHeader) : plan?.filterResponseHeader;
  const headers = clientResponseHeaders(entry.headers, filter);
  let body = entry.body;
  const rewrite = plan?.rewrite;
  if (body.length > 0 && rewrite?.accepts(entry.status, entry.headers)) {
    try {
      body = rewrite.apply(body);
    } catch {
      throw new OutriggerError(502, 'UPSTREAM_BAD_BODY', 'the upstream answer could not be rewritten as this request requires (its body is not valid JSON)');
    }
    delete headers['content-encoding'];
  }
  // The client's own conditional request, answered from the entry (RFC 9110 §13.1.2).
  const ifNoneMatch = request.header('if-none-match');
  const notModified = ifNoneMatch !== undefined && entry.etag !== undefined && entry.status === 200 && etagMatches(ifNoneMatch, entry.etag);
  const status = notModified ? 304 : entry.status;
  if (notModified) delete headers['content-length'];
  else headers['content-length'] = body.length;
  headers.age = String(Math.max(0, Math.floor((Date.now() - entry.storedAt) / 1000)));
  headers['cache-status'] = cacheStatus;
  const bodySent = !notModified && request.method !== 'HEAD';
  const observed = request.observed;
  if (observed) {
    observed.onResponseHead(status, headers);
    if (bodySent) observed.onResponseData(body);
  }
  headers['x-request-id'] = request.id;
  if (request.rateLimitHeaders) Object.assign(headers, request.rateLimitHeaders);
  res.writeHead(status, headers);
  res.end(bodySent ? body : undefined);
  return ANSWERED;
}
