/**
 * What a reader of the feed needs to cross a failover that lost entries (issue 53 item 11).
 *
 * Redis replicates asynchronously: a batch a master appended, and a reader read, may be gone from
 * the promoted replica. Its writer sends it again there (publisher.ts: a batch leaves only once a
 * replica acknowledged it), under new ids, with the same `k` (the batch token and the entry's
 * place). So a reader remembers the keys it read, with where it first read each, and skips a
 * second copy: nothing twice live. A resume skips a copy whose first read was at or before the
 * client's last id (it had that one), and delivers one whose first copy it never got.
 *
 * And the promoted replica's stream may end before the position a reader had reached on the old
 * master; entries appended there get ids after its own last one, which (with the new master's
 * clock behind the old one's) can still be before that position, and a read from the position
 * would skip them. So after its connection came back the reader asks for the stream's last
 * generated id, and when it is behind, reads again from the newest entry it had read there
 * (`readFrom`): what follows is new, or a copy it skips.
 */
import type { Redis } from 'ioredis';
import type { EndReason } from '../subscription.js';
import { comparePositions, isPosition } from './positions.js';
import { keyOf } from './publisher.js';

/** A feed that went back further than a reader can follow (`readFrom`'s `lost`). */
export const WENT_BACK: EndReason = {
  code: 'CHANGES_LOST',
  message: 'the change feed lost entries in a Redis failover and this replica cannot tell which it missed; re-read what this subscription follows',
};

/** Keys remembered at most (the oldest forgotten first): far more than a failover's resends, a few MB at most. */
const MAX_KEYS = 20_000;

export class ReadKeys {
  private readonly firstAt = new Map<string, string>();

  /** Read live at `position`: is it a copy of an entry read before (skip it)? Remembers it otherwise. */
  repeated(key: string | undefined, position: string): boolean {
    if (key === undefined) return false;
    if (this.firstAt.has(key)) return true;
    this.firstAt.set(key, position);
    if (this.firstAt.size > MAX_KEYS) this.firstAt.delete(this.firstAt.keys().next().value!);
    return false;
  }

  /** Was this entry read here, at this very position (not a copy elsewhere)? */
  readAt(key: string | undefined, position: string): boolean {
    return key !== undefined && this.firstAt.get(key) === position;
  }

  /** Read by a resume from `since`: a copy of an entry this replica read at or before `since` elsewhere in the stream (the client had it)? */
  hadBefore(key: string | undefined, position: string, since: string): boolean {
    const first = key === undefined ? undefined : this.firstAt.get(key);
    return first !== undefined && first !== position && comparePositions(first, since) <= 0;
  }
}

/** Entries walked back at most to find where a reader was (more: read from the oldest walked, told as a gap). */
const MAX_WALK = 1000;
const WALK_PAGE = 100;

/**
 * Where a reader at `position` reads on after a reconnect: there, unless the stream now ends
 * before it; then after the newest entry it had read there (the start of the stream when none is
 * left), or `lost` when none is within MAX_WALK entries of the end.
 */
export async function readFrom(redis: Redis, key: string, position: string, keys: ReadKeys): Promise<{ position: string; lost: boolean }> {
  if (comparePositions(await newestId(redis, key), position) >= 0) return { position, lost: false };
  let end = '+';
  let oldest = '0-0';
  for (let walked = 0; walked < MAX_WALK; walked += WALK_PAGE) {
    const page = (await redis.xrevrange(key, end, '-', 'COUNT', WALK_PAGE)) as Array<[string, string[]]>;
    for (const [id, fields] of page) if (keys.readAt(keyOf(fields), id)) return { position: id, lost: false };
    if (page.length < WALK_PAGE) return { position: '0-0', lost: false };
    oldest = page.at(-1)![0];
    end = `(${oldest}`;
  }
  return { position: oldest, lost: true };
}

/** The last id the stream generated (XINFO STREAM), `0-0` when there is no stream. */
export async function newestId(redis: Redis, key: string): Promise<string> {
  let info: unknown[];
  try {
    info = (await redis.call('XINFO', 'STREAM', key)) as unknown[];
  } catch (error) {
    if (String((error as Error).message).includes('no such key')) return '0-0';
    throw error;
  }
  const at = info.indexOf('last-generated-id');
  return at >= 0 ? String(info[at + 1]) : '0-0';
}

/** Were entries after `since` trimmed? Redis 7 keeps the largest deleted id (XINFO STREAM); unknown counts as trimmed. */
export async function trimmedAfter(redis: Redis, key: string, since: string): Promise<boolean> {
  const info = (await redis.call('XINFO', 'STREAM', key).catch(() => null)) as unknown[] | null;
  if (!info) return true;
  const at = info.indexOf('max-deleted-entry-id');
  const maxDeleted = at >= 0 ? String(info[at + 1]) : undefined;
  if (maxDeleted === undefined || !isPosition(maxDeleted)) return true;
  return comparePositions(maxDeleted, since) > 0;
}
