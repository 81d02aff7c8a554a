import type { IncomingMessage } from 'node:http';
import { badRequest, OutriggerError, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { parseBoundedJson } from '../input-limits/json-depth.js';
import { MAX_DOCUMENT_BODY_BYTES } from '../input-limits/limits.js';
import { clientAddressBucket } from '../net/client-address.js';
import { readCapped } from '../util/read-capped.js';
import type { RequestScope } from './scope.js';

/*
 * Own routes being observed (chain/observer.ts) see their body's chunks as `readBody` reads them:
 * the observe stage registers a tap here. A WeakMap, only for observed own routes: the proxied
 * path's body is tapped on its way to the forwarder instead.
 */
const taps = new WeakMap<IncomingMessage, (chunk: Buffer) => void>();

/** Reports each chunk `readBody` reads of this request to `tap` (an observed own route). */
export function tapRequestBody(req: IncomingMessage, tap: (chunk: Buffer) => void): void {
  taps.set(req, tap);
}

/**
 * Reads a whole request body, refusing with 413 past `limit` bytes instead of buffering it. The
 * one reader of every own route's body (and of the ACL's body predicates): each chunk is reserved
 * as it arrives against the request-body memory the proxied path's buffering counts against
 * (upstream.bufferBytesPerClient per address, upstream.bufferTotalBytes per process; issue 53),
 * and held until the response closes (the handler gives it back). As it arrives, not as
 * announced: a client that announces a large body and trickles it holds only what it sent. A chunk
 * that finds no room ends the read: 429 (this address) or 503 (the process), with Retry-After.
 */
export async function readBody(scope: RequestScope, limit: number): Promise<Buffer> {
  const req = scope.req;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
  const tap = taps.get(req);
  const reservations = scope.bodyReservations;
  let refused: 'client' | 'total' | undefined;
  const onChunk =
    reservations === undefined
      ? tap
      : (chunk: Buffer): boolean => {
          tap?.(chunk);
          const answer = reservations.tryReserve(bodyClient(scope), chunk.length);
          if (answer === 'ok') {
            scope.heldBodyBytes += chunk.length;
            return true;
          }
          refused = answer;
          return false;
        };
  const read = await readCapped(req, limit, onChunk);
  if (read.ok) return read.bytes;
  if (refused !== undefined) {
    // What was read is dropped: its reservation goes now, not when the answer is out.
    releaseBody(scope);
    throw bodyRefused(refused);
  }
  req.resume();
  throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
}

/** Gives back what the request's body reserved (the handler, when the response closes). */
export function releaseBody(scope: RequestScope): void {
  const held = scope.heldBodyBytes;
  if (held === 0 || scope.bodyReservations === undefined) return;
  scope.heldBodyBytes = 0;
  scope.bodyReservations.release(bodyClient(scope), held);
}

/** The address the bounds count by: an IPv6 client by its /64, as the forwarder counts it. */
function bodyClient(scope: RequestScope): string {
  return scope.clientIp.includes(':') ? clientAddressBucket(scope.clientIp) : scope.clientIp;
}

function bodyRefused(bound: 'client' | 'total'): OutriggerError {
  return bound === 'client'
    ? new OutriggerError(
        429,
        'TOO_MANY_REQUEST_BODIES',
        'this address already has as many request bytes being read or handled as it may (upstream.bufferBytesPerClient); retry when its other requests are answered',
        { 'retry-after': '1' },
      )
    : new OutriggerError(503, 'REQUEST_BODIES_FULL', 'the server holds as many request bytes being read or handled as it may (upstream.bufferTotalBytes); retry shortly', { 'retry-after': '1' });
}

const JSON_TYPES = /^application\/(json|merge-patch\+json)\s*(;|$)/i;

/** 415 unless the Content-Type (when sent) is JSON or a JSON merge patch. */
export function checkJsonContentType(req: IncomingMessage): void {
  const type = req.headers['content-type'];
  if (type && !JSON_TYPES.test(type)) throw unsupportedMediaType(`send the body as application/json (got ${type})`);
}

/**
 * The one JSON body parser of every door (own routes, GraphQL, the CLI): 400 naming the JSON
 * error, or the nesting bound (`input-limits/limits.ts`) that keeps recursive code behind it safe.
 */
export function parseJsonBody(body: Buffer | string, emptyHint = 'send a JSON document'): unknown {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.length === 0) throw badRequest(`the request body is empty; ${emptyHint}`);
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) throw badRequest(parsed.tooDeep ? `the request body ${parsed.message}` : `the request body is not valid JSON: ${parsed.message}`);
  return parsed.value;
}

/** A JSON body for Outrigger's own routes: 415 for another content type, 413 past `limit`, 400 naming the JSON error. */
export async function readJsonBody(scope: RequestScope, limit = MAX_DOCUMENT_BODY_BYTES): Promise<unknown> {
  checkJsonContentType(scope.req);
  return parseJsonBody(await readBody(scope, limit));
}
