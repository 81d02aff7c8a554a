import type { IncomingMessage } from 'node:http';
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { requestBodyTap } from './observe.js';

/** Reads a whole request body, refusing with 413 past `limit` bytes instead of buffering it. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  const tap = requestBodyTap(req);
  for await (const chunk of req as AsyncIterable<Buffer>) {
    tap?.(chunk);
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw payloadTooLarge(`the request body is larger than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const JSON_TYPES = /^application\/(json|merge-patch\+json)\s*(;|$)/i;

/** A JSON body for Outrigger's own routes: 415 for another content type, 400 naming the JSON error. */
export async function readJsonBody(req: IncomingMessage, limit = 1024 * 1024): Promise<unknown> {
  const type = req.headers['content-type'];
  if (type && !JSON_TYPES.test(type)) throw unsupportedMediaType(`send the body as application/json (got ${type})`);
  const body = await readBody(req, limit);
  if (body.length === 0) throw badRequest('the request body is empty; send a JSON document');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
