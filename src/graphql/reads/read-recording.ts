/**
 * Record and replay of one request's reads (issue 39): while a planned engine runs
 * (compile/engines/), every read's outcome is kept in order per read key; when the engine gives
 * up, graphql-js executes the request again over a replaying state that answers the same reads,
 * in the same order, with those outcomes (documents, refusals, failures), so no read is sent twice.
 */
import { readQueryString } from '../backend/http-reader.js';
import type { BackendRead } from '../types.js';

/** A read's key for replay: what makes two reads the same read (not its projection: a replay reads whole). */
export function recordingKey(read: BackendRead): string {
  return `${read.db}\u0000${read.collection}\u0000${read.aggregation?.name ?? ''}\u0000${readQueryString(read)}`;
}

/**
 * Outcomes per read key, in the order they were read. One Map (subclassed, so recording costs a
 * request no more objects than the Map it always took).
 */
export class ReadRecording extends Map<string, Array<Promise<unknown[]>>> {
  /** Keeps `outcome` as the next outcome of reads of `key`. */
  record(key: string, outcome: Promise<unknown[]>): void {
    const list = this.get(key);
    if (list === undefined) this.set(key, [outcome]);
    else list.push(outcome);
  }

  /** A copy to replay from: each key's outcomes are handed out once, in order (`next`). */
  forReplay(): ReadRecording {
    return new ReadRecording(Array.from(this, ([key, outcomes]) => [key, [...outcomes]]));
  }

  /** The next recorded outcome of reads of `key`, or undefined when the recording holds no more. */
  next(key: string): Promise<unknown[]> | undefined {
    return this.get(key)?.shift();
  }
}
