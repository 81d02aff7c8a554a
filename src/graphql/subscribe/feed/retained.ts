/**
 * What a resume reads of the feed (SPEC §6.5 `Last-Event-ID`): whether it can start (retained,
 * not from the future), and its pages. A copy that a writer appended again after a failover
 * (publisher.ts) of an entry the client had is not sent again (read-keys.ts).
 */
import type { Redis } from 'ioredis';
import { comparePositions, isPosition, positionTime } from './positions.js';
import { decode, type FeedEntry } from './publisher.js';
import { trimmedAfter, type ReadKeys } from './read-keys.js';

/** Where a resume starts, or why it cannot (garbage, from the future, trimmed away). */
export type ResumeStart = { ok: true; upTo: string } | { ok: false; code: 'INVALID_LAST_EVENT_ID' | 'LAST_EVENT_ID_AHEAD' | 'BEYOND_RETENTION'; message: string };

/** A page of a resume, or `trimmed` when entries after its start were trimmed away meanwhile (a subscriber that read slowly). */
export type Page = { entries: FeedEntry[]; next: string | null } | { trimmed: true; message: string };

export interface Retained {
  readonly redis: Redis;
  readonly feedKey: string;
  readonly retention: { readonly changes: number; readonly minutes: number };
  readonly readKeys: ReadKeys;
}

/** Can a resume from `since` be served, reading up to `upTo` (the reader's position)? */
export async function resumeStart(r: Retained, since: string, upTo: string): Promise<ResumeStart> {
  if (!isPosition(since)) return { ok: false, code: 'INVALID_LAST_EVENT_ID', message: 'Last-Event-ID is not an event id this server gave; live changes follow' };
  if (comparePositions(since, upTo) > 0) return { ok: false, code: 'LAST_EVENT_ID_AHEAD', message: 'Last-Event-ID is later than any change this server has; live changes follow' };
  if (comparePositions(since, upTo) === 0) return { ok: true, upTo };
  const cutoff = Date.now() - r.retention.minutes * 60_000;
  if (positionTime(since) < cutoff || (await trimmedSince(r, since))) return { ok: false, code: 'BEYOND_RETENTION', message: beyondRetention(r.retention) };
  return { ok: true, upTo };
}

/** At most `count` entries after `after` up to `upTo`; `since`: the client's Last-Event-ID. */
export async function page(r: Retained, at: { after: string; upTo: string; count: number; since: string }): Promise<Page> {
  if (await trimmedSince(r, at.after)) return { trimmed: true, message: beyondRetention(r.retention) };
  const raw = (await r.redis.xrange(r.feedKey, `(${at.after}`, at.upTo, 'COUNT', at.count)) as Array<[string, string[]]>;
  const entries: FeedEntry[] = [];
  for (const [id, fields] of raw) {
    const entry = decode(id, fields);
    // A copy appended again after a failover, of an entry the client had (read here at or before its id), is not sent again.
    if (entry && !r.readKeys.hadBefore(entry.key, id, at.since)) entries.push(entry);
  }
  // `next`: where the following page starts, when this one was full (else `upTo` was reached).
  return { entries, next: raw.length >= at.count ? (raw.at(-1)?.[0] ?? null) : null };
}

/** Were entries after `since` trimmed (the first entry kept is after it, and Redis deleted one after it)? */
async function trimmedSince(r: Retained, since: string): Promise<boolean> {
  const first = (await r.redis.xrange(r.feedKey, '-', '+', 'COUNT', 1)) as Array<[string, string[]]>;
  const firstId = first[0]?.[0];
  return firstId === undefined || comparePositions(firstId, since) > 0 ? trimmedAfter(r.redis, r.feedKey, since) : false;
}

function beyondRetention(retention: Retained['retention']): string {
  return `the changes after Last-Event-ID are no longer retained (subscriptions.retention: ${retention.changes} changes or ${retention.minutes} minutes); re-read what this subscription follows, live changes follow`;
}
