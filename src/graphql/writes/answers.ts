/**
 * What RESTHeart's answers to writes mean (shared/notes/restheart-writes.md): the new id in the
 * `Location` header (absolute or relative, the last segment), the counts and links of a bulk
 * write (200, or 207 with `errors` when part of it failed), and the error body of a refusal
 * (`CONFLICT` for 409, a duplicate key; `BACKEND_ERROR` with the status and message otherwise).
 */
import { STATUS_CODES } from 'node:http';
import { GraphQLError } from 'graphql';
import type { BackendWriteResponse } from '../types.js';
import { isJsonObject } from '../../util/objects.js';

const HEX24 = /^[0-9a-fA-F]{24}$/;

/** The id a path segment names, as RESTHeart's STRING_OID rule (and an `id_type` in the link) reads it. */
export function idFromSegment(segment: string, idType?: string | null): unknown {
  if (idType?.toUpperCase() === 'NUMBER' && segment.trim() !== '' && Number.isFinite(Number(segment))) return Number(segment);
  if (idType?.toUpperCase() === 'STRING') return segment;
  return HEX24.test(segment) ? { $oid: segment.toLowerCase() } : segment;
}

/** The last path segment of a `Location` or link (absolute or relative), decoded, and its `id_type`. */
export function lastSegment(location: string): { segment: string; idType: string | null } | undefined {
  let url: URL;
  try {
    url = new URL(location, 'http://relative.invalid');
  } catch {
    return undefined;
  }
  const segments = url.pathname.split('/').filter(Boolean);
  const last = segments[segments.length - 1];
  if (last === undefined) return undefined;
  try {
    return { segment: decodeURIComponent(last), idType: url.searchParams.get('id_type') };
  } catch {
    return undefined;
  }
}

/** An id as a GraphQL `ID`/`String`: an ObjectId as its hex string, anything else as text. */
export function idAsString(id: unknown): string {
  if (typeof id === 'string') return id;
  if (id !== null && typeof id === 'object' && typeof (id as Record<string, unknown>).$oid === 'string') return (id as { $oid: string }).$oid;
  return typeof id === 'number' ? String(id) : JSON.stringify(id);
}

export interface BulkResult {
  inserted: number;
  modified: number;
  deleted: number;
  matched: number;
  links: string[];
  errors: Array<{ index?: number; httpStatus?: number; message?: string }>;
}

/** A bulk write's answer (`{inserted, links, deleted, modified, matched, errors?}`, or HAL's `_embedded`). */
export function bulkResult(body: string): BulkResult | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (isJsonObject(parsed) && isJsonObject(parsed._embedded)) {
    const inner = (parsed._embedded as Record<string, unknown>)['rh:result'];
    if (Array.isArray(inner) && isJsonObject(inner[0])) parsed = inner[0];
  }
  if (!isJsonObject(parsed)) return undefined;
  const n = (k: string) => (typeof parsed[k] === 'number' ? (parsed[k] as number) : 0);
  const links = Array.isArray(parsed.links) ? parsed.links.filter((l): l is string => typeof l === 'string') : [];
  const errors = Array.isArray(parsed.errors) ? parsed.errors.filter(isJsonObject).map((e) => e as BulkResult['errors'][number]) : [];
  return { inserted: n('inserted'), modified: n('modified'), deleted: n('deleted'), matched: n('matched'), links, errors };
}

/** The backend's own message from its error body, shortened. */
function backendMessage(body: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    const message = isJsonObject(parsed) ? parsed.message : undefined;
    if (typeof message === 'string' && message !== '') return message.length > 300 ? `${message.slice(0, 300)}…` : message;
  } catch {
    // not JSON: no message to pass on
  }
  return undefined;
}

/** The field error for a write the backend refused: CONFLICT for 409, BACKEND_ERROR otherwise. */
export function writeError(what: string, response: BackendWriteResponse, extra: Record<string, unknown> = {}): GraphQLError {
  const status = response.status;
  const message = backendMessage(response.body);
  const text = `the backend answered ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd() + ` to ${what}${message ? `: ${message}` : ''}`;
  const code = status === 409 ? 'CONFLICT' : 'BACKEND_ERROR';
  return new GraphQLError(text, { extensions: { code, status, ...(message ? { backendMessage: message } : {}), ...extra } });
}

/** A 207 (or a 200 with errors): part of a bulk write failed. CONFLICT when every failure is a duplicate key. */
export function partialWriteError(what: string, result: BulkResult, status: number): GraphQLError {
  const duplicate = result.errors.length > 0 && result.errors.every((e) => e.httpStatus === 409);
  const first = result.errors[0];
  const detail = first ? ` (first: document ${first.index ?? '?'}, ${first.httpStatus ?? '?'}${first.message ? ` ${first.message}` : ''})` : '';
  return new GraphQLError(`the backend wrote only part of ${what}: ${result.errors.length} of its documents failed${detail}`, {
    extensions: {
      code: duplicate ? 'CONFLICT' : 'BACKEND_ERROR',
      status,
      inserted: result.inserted,
      modified: result.modified,
      deleted: result.deleted,
      errors: result.errors.slice(0, 20),
    },
  });
}
