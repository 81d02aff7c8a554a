/**
 * One API key as stored (SPEC §5.1): everything but the key itself, whose SHA-256 is `keyHash`.
 * Dates are epoch milliseconds in Redis and `{"$date": ms}` in answers (SPEC §0).
 * `lastUsedAt` lives in its own hash (written by the verification path, never read by it).
 */
import type { EpochDate } from '../util/epoch-date.js';
import { presentKeyLimits, type KeyLimits } from './key-limits.js';
import type { PriorityClass } from '../principal/priority.js';

export interface KeyRecord {
  _id: string;
  owner: string;
  name: string;
  roles: string[];
  createdAt: number;
  expiresAt: number;
  via: 'api' | 'oauth';
  /** The name of the client that asked, for keys issued through agent sign-in. */
  client?: string;
  /**
   * `token`: a user's own short-lived sign-in token (SPEC §5.6), carrying all the user's roles;
   * verified like a key, never counted against the key limit, listed only on the admin list.
   */
  kind?: 'token';
  serviceId: string;
  keyHash: string;
  /** The key's first characters (SPEC §15); absent on keys issued before it was kept. */
  start?: string;
  /**
   * Set by a rotation: the id of the key that replaced this one, whose `expiresAt` then ends
   * its grace period. A key with it never counts toward the key limit and is not rotated again.
   */
  replacedBy?: string;
  /** An admin's overrides of named `by: key` policies (SPEC §10). */
  limits?: KeyLimits;
  /** An admin's class for this key when the backend is at its limit (SPEC §13). */
  priority?: PriorityClass;
}

const date = (ms: number): EpochDate => ({ $date: ms });

/** `GET /keys`: the caller's own view; never the key or its hash. */
export function ownerView(record: KeyRecord, lastUsedAt: number | undefined) {
  const view: Record<string, unknown> = {
    _id: record._id,
    name: record.name,
    ...(record.start !== undefined ? { start: record.start } : {}),
    roles: record.roles,
    createdAt: date(record.createdAt),
    expiresAt: date(record.expiresAt),
  };
  if (lastUsedAt !== undefined) view.lastUsedAt = date(lastUsedAt);
  view.via = record.via;
  if (record.client !== undefined) view.client = record.client;
  if (record.kind !== undefined) view.kind = record.kind;
  if (record.replacedBy !== undefined) view.replacedBy = record.replacedBy;
  view.limits = presentKeyLimits(record.limits);
  if (record.priority !== undefined) view.priority = record.priority;
  return view;
}

/** `GET /_admin/keys`: as the owner's view, plus the owner. */
export function adminView(record: KeyRecord, lastUsedAt: number | undefined) {
  return { _id: record._id, owner: record.owner, ...ownerView(record, lastUsedAt) };
}

/** Newest first, then by id, so pages are stable. */
export function newestFirst(a: KeyRecord, b: KeyRecord): number {
  return b.createdAt - a.createdAt || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);
}

export function parseKeyRecord(text: string | null | undefined): KeyRecord | null {
  if (!text) return null;
  try {
    const value = JSON.parse(text) as KeyRecord;
    return typeof value === 'object' && value !== null && typeof value._id === 'string' && typeof value.expiresAt === 'number' ? value : null;
  } catch {
    return null;
  }
}
