/**
 * Whole GraphQL answers being executed, by answer key (SPEC §12 "concurrent misses for one key
 * collapse"): the first caller to miss executes, identical callers that miss meanwhile wait for
 * it and then look the key up again, so N identical concurrent queries make one set of backend
 * reads. Only callers under the same key wait (the key holds the caller's id and roles), and
 * each one still re-decides its reads at the lookup after the wait (answer-cache.ts): waiting
 * never hands a caller an answer it could not be served. A flight that stores nothing (errors,
 * a write meanwhile, the executing client gone) lets its waiters go to execute themselves.
 */
import { onAbort, type AbortLike } from '../util/request-abort.js';

interface Flight {
  readonly done: Promise<void>;
  readonly settle: () => void;
}

export class AnswerFlights {
  private readonly flights = new Map<string, Flight>();
  /** Callers waiting for another's execution now (tests and the adversarial rows watch it). */
  waiting = 0;

  /** How many keys are being executed now. */
  get size(): number {
    return this.flights.size;
  }

  /**
   * Marks `key` as being executed by this caller; returns its landing (idempotent: call it once
   * the answer was stored or will not be). A key already in flight keeps its first executor.
   */
  begin(key: string): () => void {
    if (this.flights.has(key)) return () => undefined;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const flight: Flight = { done, settle };
    this.flights.set(key, flight);
    return () => {
      if (this.flights.get(key) === flight) this.flights.delete(key);
      flight.settle();
    };
  }

  /** Resolves once the execution of `key` landed, or the waiting caller's client left; undefined when nobody executes it. */
  join(key: string, signal: AbortLike | undefined): Promise<void> | undefined {
    const flight = this.flights.get(key);
    if (flight === undefined) return undefined;
    this.waiting++;
    return new Promise<void>((resolve) => {
      let gone = false;
      let stop: (() => void) | undefined;
      const go = (): void => {
        if (gone) return;
        gone = true;
        stop?.();
        this.waiting--;
        resolve();
      };
      // The waiting caller's client left: it stops waiting (its own execution then stops at once); the others are not touched.
      if (signal !== undefined) stop = onAbort(signal, go);
      void flight.done.then(go);
    });
  }
}
