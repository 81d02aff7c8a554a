import type { IncomingMessage } from 'node:http';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { parseBoundedJson } from '../input-limits/json-depth.js';
import { MAX_DOCUMENT_BODY_BYTES } from '../input-limits/limits.js';
import { readCapped } from '../util/read-capped.js';
import { requestBodyTap } from './observe.js';

/** Reads a whole request body, refusing with 413 past `limit` bytes instead of buffering it. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
  const read = await readCapped(req, limit, requestBodyTap(req));
  if (read.ok) return read.bytes;
  req.resume();
  throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
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
export async function readJsonBody(req: IncomingMessage, limit = MAX_DOCUMENT_BODY_BYTES): Promise<unknown> {
  checkJsonContentType(req);
  return parseJsonBody(await readBody(req, limit));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
