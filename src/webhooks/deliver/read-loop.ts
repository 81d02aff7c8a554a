/**
 * The worker's read loop: XREADGROUP on a blocking connection of its own, reading only as many
 * entries as free event slots can take (`concurrency` counts events, event-slots.ts), then each
 * entry run on its own. The delivery markers of a read batch are read with one MGET, and one list
 * of offsets says where each event's markers start in its reply. An entry is acknowledged once
 * every delivery of every event in it is final or scheduled for a retry.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../../observability/logger.js';
import { entryDeliveryField, type RedisKeys } from '../../store/keys.js';
import { backoffMs } from '../../util/backoff.js';
import { LinkedMap } from '../../util/linked-set.js';
import type { CapturedEvent } from '../event.js';
import { decodeStreamEntry, isNewerEntry, type SkippedWebhook, type StreamRecord } from '../stream-record.js';
import { EventSlots } from './event-slots.js';
import { deliverOrFinalize, type Delivery, type DeliveryWork, type EntryRef } from './delivery.js';
import { WorkerKilled } from './group-commit.js';

const BLOCK_MS = 2000;
/** How long the read loop waits for half of the event slots to be free before reading fewer. */
const READ_BATCH_WAIT_MS = 5;
const STOPPED = Symbol('stopped');
const NO_MARKERS: Promise<Array<string | null>> = Promise.resolve([]);
const DONE: Promise<void> = Promise.resolve();

/** Whether the worker still takes work, and whether it was killed (tests: a crash). Shared by the worker's parts. */
export interface WorkerState {
  running: boolean;
  killed: boolean;
}

/** What the read loop asks of the worker for each entry. */
export interface EntryWork extends DeliveryWork {
  logSkipped(event: CapturedEvent, skipped: SkippedWebhook): Promise<void>;
  /** Acknowledges the entry (XACK + XDEL, through the group commit); with `markers`, deletes its markers' hash too. */
  acknowledge(id: string, markers: boolean): Promise<void>;
}

export interface StreamReaderOptions {
  redis: Redis;
  /** A connection of its own for XREADGROUP BLOCK, whose replies may take up to `blockMs`. */
  openBlockingConnection(blockMs: number): Redis;
  keys: RedisKeys;
  logger: Logger;
  consumer: string;
  concurrency: number;
  enabled(): boolean;
  state: WorkerState;
  work: EntryWork;
  /** Tests: runs before an entry is acknowledged (to crash a worker in that window). */
  beforeAck?(entryId: string): void | Promise<void>;
}

/** Entries are read as bytes: a body field reaches `captureBody` exactly as the proxy captured it. */
export type StreamEntry = [id: string, fields: Buffer[] | null];

export class StreamReader {
  groupReady = false;
  /**
   * Entries read and not acknowledged yet, by id (their events may still wait for a slot). A
   * linked list, not a Map: a Map written and deleted per entry keeps finished entries alive
   * past young collections (util/linked-set.ts).
   */
  readonly inflight = new LinkedMap<string, Promise<void>>();
  /** What `concurrency` counts: events being delivered. */
  readonly slots: EventSlots;
  /** Entries of a newer version, left pending (see `leftForNewer`). */
  readonly newerEntries = new Set<string>();
  private blocking: Redis | null = null;
  private loop: Promise<void> | null = null;
  /**
   * Ends the read loop's current wait with STOPPED (stop() or kill()). One slot, set per read: a
   * Promise.race against one long-lived "stopped" promise would leave a reaction on it at every
   * read (every 2 s when idle), kept until the worker stops.
   */
  private endRead: ((value: typeof STOPPED) => void) | null = null;
  /** Events per entry in recent reads (a running mean), to turn free slots into a read COUNT. */
  private eventsPerEntry = 1;
  /** The read loop waiting for free event slots. */
  private slotWaiter: { need: number; wake(): void } | null = null;
  private newerWarnedAt = 0;

  constructor(private readonly o: StreamReaderOptions) {
    this.slots = new EventSlots(o.concurrency, () => {
      const waiter = this.slotWaiter;
      if (waiter && this.slots.free >= waiter.need) waiter.wake();
    });
  }

  start(): void {
    this.blocking = this.o.openBlockingConnection(BLOCK_MS);
    this.loop = this.readLoop();
  }

  /** Ends the read, wakes a wait for slots (a stuck delivery may hold them), drops the blocking connection. */
  halt(): void {
    this.endRead?.(STOPPED);
    this.slotWaiter?.wake();
    this.blocking?.disconnect();
  }

  /** Resolves when the loop has ended (after `halt`). */
  async ended(): Promise<void> {
    await this.loop?.catch(() => {});
  }

  /** How many entries to read or claim for `free` event slots (at least one). */
  entriesFor(free: number): number {
    return Math.max(1, Math.floor(free / Math.max(1, this.eventsPerEntry)));
  }

  private async ensureGroup(): Promise<void> {
    try {
      // From the start of the stream: events written before any worker existed are delivered too.
      await this.o.redis.xgroup('CREATE', this.o.keys.events, this.o.keys.eventsGroup, '0', 'MKSTREAM');
    } catch (error) {
      if (!/BUSYGROUP/.test((error as Error).message)) throw error;
    }
    this.groupReady = true;
  }

  private async readLoop(): Promise<void> {
    const { state } = this.o;
    let failures = 0;
    while (state.running) {
      if (!this.o.enabled()) {
        await sleep(250);
        continue;
      }
      let free = this.slots.free;
      const batch = Math.max(1, Math.floor(this.o.concurrency / 2));
      if (free < batch) {
        // Read in batches, not one entry per freed slot: every read, marker MGET and commit is a
        // round trip and a socket write whatever its size. Wait for one slot at least, then up
        // to READ_BATCH_WAIT_MS for half of them (so slow targets holding slots delay reads by
        // that much at most).
        await this.slotsFree(free <= 0 ? 1 : batch, free <= 0 ? null : READ_BATCH_WAIT_MS);
        if (free <= 0 || !state.running) continue;
        free = this.slots.free;
      }
      let reply: unknown;
      try {
        if (!this.groupReady) await this.ensureGroup();
        if (!state.running) break; // stopped while the group was being made: no read would be ended
        const read = this.blocking!.callBuffer('XREADGROUP', 'GROUP', this.o.keys.eventsGroup, this.o.consumer, 'COUNT', this.entriesFor(free), 'BLOCK', BLOCK_MS, 'STREAMS', this.o.keys.events, '>');
        // A read queued while the connection was reconnecting is never settled by the disconnect
        // of stop() (ioredis keeps it queued): the stop signal ends the wait instead.
        reply = await new Promise<unknown>((resolve, reject) => {
          this.endRead = resolve;
          read.then(resolve, reject);
        }).finally(() => (this.endRead = null));
        if (reply === STOPPED) {
          read.catch(() => {});
          break;
        }
        failures = 0;
      } catch (error) {
        if (!state.running) break;
        const message = (error as Error).message;
        if (/NOGROUP/.test(message)) this.groupReady = false; // Redis lost its data: create the group again
        failures++;
        if (failures === 1 || failures % 30 === 0) this.o.logger.warn({ err: message }, 'webhook worker cannot read the event stream; retrying');
        await sleep(backoffMs(failures, 100, 2000));
        continue;
      }
      this.handleEntries(streamEntries(reply));
    }
  }

  /**
   * Starts the entries of one read (or claim): their delivery markers are read with one MGET for
   * the whole batch, then each entry runs on its own. `starts` is the one list of offsets into
   * that reply: for each entry, where each of its events' markers start, then where they end.
   */
  handleEntries(entries: StreamEntry[]): void {
    const fresh: StreamEntry[] = [];
    const decoded: StreamRecord[][] = [];
    let events = 0;
    for (const entry of entries) {
      const [id, fields] = entry;
      if (this.inflight.has(id) || this.newerEntries.has(id)) continue;
      const records = decodeStreamEntry(fields);
      if (records === null && this.leftForNewer(id, fields)) continue;
      fresh.push(entry);
      decoded.push(records ?? []);
      events += Math.max(1, records?.length ?? 0);
    }
    if (fresh.length === 0) return;
    this.eventsPerEntry = 0.75 * this.eventsPerEntry + 0.25 * (events / fresh.length);
    const markerKeys: string[] = [];
    const markerFields: string[][] = [];
    const starts: number[][] = [];
    for (const records of decoded) {
      const at: number[] = [];
      const fields: string[] = [];
      for (const record of records) {
        at.push(markerKeys.length);
        for (const m of record.matched) {
          markerKeys.push(this.o.keys.deliveryDone(record.event.id, m.id));
          fields.push(entryDeliveryField(record.event.id, m.id));
        }
      }
      at.push(markerKeys.length);
      starts.push(at);
      markerFields.push(fields);
    }
    const markers = markerKeys.length > 0 ? this.readMarkers(fresh, markerKeys, markerFields) : NO_MARKERS;
    fresh.forEach(([id], i) => {
      const at = starts[i]!;
      // Only entries with markers to read wait for the MGET: a reply nobody awaits would be an unhandled rejection.
      const work = this.processEntry(id, decoded[i]!, at[at.length - 1]! > at[0]! ? markers : NO_MARKERS, at)
        .catch((error: unknown) => {
          if (error instanceof WorkerKilled) return;
          this.o.logger.warn({ err: String(error), entry: id }, 'a webhook event stays pending; it will be reclaimed and tried again');
        })
        .finally(() => this.inflight.remove(node));
      const node = this.inflight.set(id, work);
    });
  }

  /**
   * The markers of a batch's deliveries, in `keys` order: a delivery's own key (retries,
   * throttled or resent deliveries, workers before the entry hashes) or its field in its
   * entry's hash, whichever exists. One MGET and one HMGET per entry with deliveries, pipelined.
   */
  private async readMarkers(entries: readonly StreamEntry[], keys: string[], fieldsOf: readonly string[][]): Promise<Array<string | null>> {
    const pipeline = this.o.redis.pipeline();
    pipeline.mget(keys);
    entries.forEach(([id], i) => {
      if (fieldsOf[i]!.length > 0) pipeline.hmget(this.o.keys.entryDeliveries(id), ...fieldsOf[i]!);
    });
    const replies = (await pipeline.exec()) ?? [];
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0] as Error;
    const markers = replies[0]![1] as Array<string | null>;
    let at = 0;
    let reply = 1;
    for (const fields of fieldsOf) {
      if (fields.length === 0) continue;
      const values = replies[reply++]![1] as Array<string | null>;
      for (let i = 0; i < values.length; i++, at++) markers[at] ??= values[i]!;
    }
    return markers;
  }

  /**
   * An entry that did not decode because it is of a newer version than this worker reads (a
   * proxy upgraded first) is left pending, not acknowledged as not ours: once idle
   * `reclaimIdleMs`, a worker that reads it claims it. This worker's sweep for its own orphans
   * passes over it, so it does not claim it back every sweep.
   */
  private leftForNewer(id: string, fields: Buffer[] | null): boolean {
    if (!isNewerEntry(fields)) return false;
    if (this.newerEntries.size >= 10_000) this.newerEntries.clear();
    this.newerEntries.add(id);
    const now = Date.now();
    if (now - this.newerWarnedAt >= 10_000) {
      this.newerWarnedAt = now;
      this.o.logger.warn({ entry: id }, 'a webhook event was written by a newer Outrigger than this worker; it is left for an upgraded worker (upgrade the workers)');
    }
    return true;
  }

  /** Resolves once `need` event slots are free, or after `timeoutMs` (null: no limit). */
  private slotsFree(need: number, timeoutMs: number | null): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        if (timer) clearTimeout(timer);
        this.slotWaiter = null;
        resolve();
      };
      const timer = timeoutMs === null ? null : setTimeout(wake, timeoutMs);
      this.slotWaiter = { need, wake };
    });
  }

  /**
   * An entry's events, each delivered to its matching webhooks; the entry is acknowledged once
   * every delivery of every event is final or scheduled for a retry. Each event holds a slot
   * while its deliveries run. `at`: where each event's markers start in `markersOf`'s reply.
   */
  private async processEntry(id: string, records: StreamRecord[], markersOf: Promise<Array<string | null>>, at: number[]): Promise<void> {
    const { work, state } = this.o;
    let marked = false;
    if (records.length > 0) {
      const markers = await markersOf; // [] when the entry has no delivery to make
      const only = records.length === 1 ? records[0]! : null;
      // A marker means an earlier run of this entry finished that delivery (or scheduled its retry).
      const due = only ? only.matched.filter((_, i) => markers[at[0]! + i] == null) : [];
      // The usual entry, one event with one delivery and nothing else to log: its commit
      // acknowledges the entry too (one MULTI: the log entry, the retry job and the
      // acknowledgement land together or not at all), so it needs no marker and no second
      // commit. `beforeAck` (tests) wants the window between the two, so it keeps them apart.
      if (only && due.length === 1 && only.skipped.length === 0 && !this.o.beforeAck) {
        const m = due[0]!;
        const ref: EntryRef = { id, ack: true, done: false };
        await this.inSlot(() => deliverOrFinalize(work, firstAttempt(only.event, m, ref)));
        if (ref.done) return;
      } else {
        const ref: EntryRef = { id, ack: false, done: false };
        const events = records.map((record, r) => this.inSlot(() => this.processEvent(record, markers, at[r]!, ref)));
        await allSettledOrThrow(events);
        marked = true;
      }
    }
    if (state.killed) throw new WorkerKilled();
    await this.o.beforeAck?.(id);
    if (state.killed) throw new WorkerKilled();
    await work.acknowledge(id, marked);
  }

  /** Runs one event's work in an event slot, waiting for one if none is free. */
  private inSlot(task: () => Promise<void>): Promise<void> {
    const wait = this.slots.acquire();
    return wait ? wait.then(() => this.runInSlot(task)) : this.runInSlot(task);
  }

  /** `task` in the slot just taken, given back when it settles (no async frame: a promise and an await less per event). */
  private runInSlot(task: () => Promise<void>): Promise<void> {
    let work: Promise<void>;
    try {
      if (this.o.state.killed) throw new WorkerKilled();
      work = task();
    } catch (error) {
      this.slots.release();
      return Promise.reject(error);
    }
    return work.then(this.releaseSlot, this.releaseSlotAndThrow);
  }

  private readonly releaseSlot = (): void => this.slots.release();
  private readonly releaseSlotAndThrow = (error: unknown): never => {
    this.slots.release();
    throw error;
  };

  /** One event of an entry that has more to do than one delivery: each delivery commits with its marker (`from`: its first in `markers`). */
  private processEvent(record: StreamRecord, markers: Array<string | null>, from: number, ref: EntryRef): Promise<void> {
    const { work } = this.o;
    if (record.skipped.length === 0 && record.matched.length === 1) {
      // The usual event of a batch, one delivery: its promise is the event's (no list to settle).
      if (markers[from] != null) return DONE;
      return deliverOrFinalize(work, firstAttempt(record.event, record.matched[0]!, ref));
    }
    const tasks: Array<Promise<void>> = record.skipped.map((s) => work.logSkipped(record.event, s));
    record.matched.forEach((m, i) => {
      if (markers[from + i] != null) return;
      tasks.push(deliverOrFinalize(work, firstAttempt(record.event, m, ref)));
    });
    return allSettledOrThrow(tasks);
  }
}

type RawStreamEntry = [id: Buffer | string, fields: Buffer[] | null];

function streamEntries(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  const out: StreamEntry[] = [];
  for (const stream of reply as Array<[Buffer, RawStreamEntry[]]>) for (const [id, fields] of stream[1] ?? []) out.push([String(id), fields]);
  return out;
}

/** Waits for every task, then throws the first failure: no task is left running behind an early throw. */
async function allSettledOrThrow(tasks: ReadonlyArray<Promise<void>>): Promise<void> {
  const results = await Promise.allSettled(tasks);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function firstAttempt(event: CapturedEvent, matched: { id: string; reason: string }, entry: EntryRef): Delivery {
  return { event, webhookId: matched.id, condition: { matched: true, reason: matched.reason }, attempt: 1, jobMember: null, entry };
}
