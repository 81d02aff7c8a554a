/**
 * Recording (SPEC §7.4): for `webhooks.recordingSeconds` (60 by default) every request the
 * observer sees is captured regardless of conditions, with each webhook's evaluation result,
 * so a user can read real paths and body fields before writing a condition.
 *
 * The state lives in Redis (`recordingState`, a JSON `{startedAt, endsAt}`), so a recording
 * started on one replica records on all of them. Each replica keeps `endsAt` in memory (the
 * observer asks on every request, without Redis). Starting or stopping bumps the webhooks'
 * version counter and announces a webhooks change, so every replica's webhook store reloads
 * (at once through the change bus, or at its next version poll if the message was lost) and
 * calls `refresh()`: no poll of its own. Recorded requests are appended by the event producer
 * to `recordingEntries` (a list capped at RECORDING_MAX_ENTRIES, readable for a day).
 */
import type { Redis } from 'ioredis';
import type { ChangeBus } from '../../store/change-bus.js';
import type { RedisKeys } from '../../store/keys.js';
import type { EpochDate } from '../../util/epoch-date.js';
import type { RecordedRequest } from '../stream-record.js';

export const RECORDING_CHANGE_ID = '$recording';
export const RECORDING_MAX_ENTRIES = 10_000;
export const RECORDING_TTL_MS = 24 * 3600_000;

export interface RecordingView {
  active: boolean;
  startedAt: EpochDate | null;
  endsAt: EpochDate | null;
  windowSeconds: number;
  /** Requests captured (the most recent `RECORDING_MAX_ENTRIES` at most). */
  total: number;
  requests: RecordedRequest[];
}

export class Recording {
  private startedAt = 0;
  private endsAt = 0;
  private watching = false;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly bus: ChangeBus,
    readonly windowMs: number,
  ) {}

  /** Hot path: no Redis. */
  isActive(now = Date.now()): boolean {
    return this.endsAt > now;
  }

  /** Follow the shared state (processes that serve HTTP); `refresh` is called on every webhooks reload. */
  async start(): Promise<void> {
    this.watching = true;
    await this.refresh().catch(() => {});
  }

  stop(): void {
    this.watching = false;
  }

  /** Called when the webhook documents were reloaded (a change message or a version change). */
  changed(): void {
    if (this.watching) void this.refresh().catch(() => {});
  }

  async refresh(): Promise<void> {
    const text = await this.redis.get(this.keys.recordingState);
    const state = parseState(text);
    this.startedAt = state?.startedAt ?? 0;
    this.endsAt = state?.endsAt ?? 0;
  }

  /** Starts (or restarts) a recording window; earlier captured requests are discarded. */
  async begin(now = Date.now()): Promise<RecordingView> {
    const state = { startedAt: now, endsAt: now + this.windowMs };
    // The state outlives the window (active means endsAt > now), so a finished recording still
    // tells when it ran.
    await this.redis.multi().set(this.keys.recordingState, JSON.stringify(state), 'PX', RECORDING_TTL_MS).del(this.keys.recordingEntries).incr(this.keys.webhooksVersion).exec();
    this.startedAt = state.startedAt;
    this.endsAt = state.endsAt;
    await this.bus.publish({ kind: 'webhooks', id: RECORDING_CHANGE_ID });
    return this.view(0, []);
  }

  /** Stops the recording; what it captured stays readable. */
  async end(now = Date.now()): Promise<void> {
    const state = parseState(await this.redis.get(this.keys.recordingState));
    if (state && state.endsAt > now) {
      await this.redis
        .multi()
        .set(this.keys.recordingState, JSON.stringify({ startedAt: state.startedAt, endsAt: now }), 'PX', RECORDING_TTL_MS)
        .incr(this.keys.webhooksVersion)
        .exec();
    }
    this.endsAt = Math.min(this.endsAt, now);
    await this.bus.publish({ kind: 'webhooks', id: RECORDING_CHANGE_ID });
  }

  async read(paging: { page: number; pagesize: number }): Promise<RecordingView> {
    const start = (paging.page - 1) * paging.pagesize;
    const [[, stateText], [, total], [, items]] = (await this.redis
      .multi()
      .get(this.keys.recordingState)
      .llen(this.keys.recordingEntries)
      .lrange(this.keys.recordingEntries, start, start + paging.pagesize - 1)
      .exec()) as [[unknown, string | null], [unknown, number], [unknown, string[]]];
    const state = parseState(stateText);
    if (state) {
      this.startedAt = state.startedAt;
      this.endsAt = state.endsAt;
    }
    const requests: RecordedRequest[] = [];
    for (const item of items) {
      try {
        requests.push(JSON.parse(item) as RecordedRequest);
      } catch {
        // a damaged entry is left out
      }
    }
    return this.view(total, requests, state);
  }

  private view(total: number, requests: RecordedRequest[], state?: { startedAt: number; endsAt: number } | null): RecordingView {
    const startedAt = state ? state.startedAt : this.startedAt;
    const endsAt = state ? state.endsAt : this.endsAt;
    return {
      active: endsAt > Date.now(),
      startedAt: startedAt ? { $date: startedAt } : null,
      endsAt: endsAt ? { $date: endsAt } : null,
      windowSeconds: this.windowMs / 1000,
      total,
      requests,
    };
  }
}

function parseState(text: string | null): { startedAt: number; endsAt: number } | null {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text) as { startedAt?: unknown; endsAt?: unknown };
    if (typeof parsed.startedAt === 'number' && typeof parsed.endsAt === 'number') return { startedAt: parsed.startedAt, endsAt: parsed.endsAt };
  } catch {
    // ignored
  }
  return null;
}
