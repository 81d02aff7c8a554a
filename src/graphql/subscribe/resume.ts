/**
 * A subscription's resume (`Last-Event-ID`, SPEC §6.5, issue 53 item 11): the changes it missed,
 * read back from the feed a page at a time and handed out as the subscriber reads them.
 */
import { comparePositions } from './feed/positions.js';
import type { ChangeFeed } from './feed/feed.js';
import type { FeedEntry } from './feed/publisher.js';
import type { ActiveSubscription, SubscriptionHub } from './hub.js';
import type { SubscriptionStream } from './subscription.js';

/** Missed changes handed to a resuming subscriber at once (at most half its `maxBufferedEvents`). */
const RESUME_PAGE = 100;
/** A resuming subscriber must read each page within this; else it is ended as slow. */
const RESUME_STALL_MS = 30_000;
/** Bytes its transport may hold unsent before the next page. */
const RESUME_UNSENT_BYTES = 256 * 1024;

export interface ResumeParts {
  readonly feed: ChangeFeed;
  readonly hub: SubscriptionHub;
  /** subscriptions.maxBufferedEvents: a page is at most half of it. */
  readonly maxBufferedEvents: number;
}

/**
 * A resume (`Last-Event-ID`, issue 53 item 11): the missed changes a page at a time, each page
 * once the previous one was handed out and sent (never more than a page waits, whatever the
 * backlog within retention), then the live changes held meanwhile. Pages go on up to the
 * feed's position when the last one was read, so the live changes the subscription's bound
 * dropped from what it held are covered. A subscriber that does not read a page within
 * RESUME_STALL_MS is ended as slow.
 */
export async function resume(parts: ResumeParts, sub: ActiveSubscription, since: string, unsent: (() => number) | undefined): Promise<void> {
  const stream = sub.stream;
  const start = await parts.feed.resumeStart(since);
  if (!start.ok) {
    stream.notice({ message: start.message, code: start.code });
    stream.release();
    return;
  }
  const size = Math.max(1, Math.min(RESUME_PAGE, Math.floor(parts.maxBufferedEvents / 2)));
  let after = since;
  for (;;) {
    if (!stream.open) return;
    const upTo = parts.feed.current;
    if (comparePositions(after, upTo) >= 0) break;
    const page = await parts.feed.page(after, upTo, size, since);
    if ('trimmed' in page) {
      stream.notice({ message: page.message, code: 'BEYOND_RETENTION' });
      break;
    }
    await deliverMissed(parts.hub, page.entries, sub);
    // A short page reached `upTo`; a full one goes on after its last entry.
    after = page.next ?? upTo;
    if (!(await readOn(stream, unsent))) {
      stream.end({
        message: `this subscriber did not read the changes it missed within ${RESUME_STALL_MS / 1000} s; reconnect with the Last-Event-ID of the last event received`,
        code: 'SLOW_SUBSCRIBER',
      });
      return;
    }
  }
  stream.release();
}

/** A page's changes to the resuming subscriber, in order; a writer's gap in it is told in its place. */
async function deliverMissed(hub: SubscriptionHub, entries: readonly FeedEntry[], sub: ActiveSubscription): Promise<void> {
  let run: Array<{ position: string; change: NonNullable<FeedEntry['change']> }> = [];
  for (const e of entries) {
    if (e.change) run.push({ position: e.position, change: e.change });
    else {
      if (run.length > 0) await hub.dispatch(run, sub);
      run = [];
      hub.tell(e.gap, sub);
    }
  }
  if (run.length > 0) await hub.dispatch(run, sub);
}

/** Waits until the stream handed out every result and the transport sent most of it; false when the subscriber took too long. */
async function readOn(stream: SubscriptionStream, unsent: (() => number) | undefined): Promise<boolean> {
  const deadline = Date.now() + RESUME_STALL_MS;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), RESUME_STALL_MS)));
  const read = await Promise.race([stream.whenEmpty().then(() => true as const), late]);
  clearTimeout(timer);
  if (!read) return !stream.open;
  while (stream.open && unsent && unsent() > RESUME_UNSENT_BYTES) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}
