/**
 * One delivery of an event to one webhook, as the read loop, the retry jobs and the worker pass
 * it between them: a first attempt from a stream entry, or a retry job's later attempt. One
 * object instead of six arguments threaded through each of them.
 */
import type { RetryJob } from '../delivery-contract.js';
import type { CapturedEvent } from '../event.js';

/**
 * The stream entry a first attempt comes from. With `ack`, the entry's only delivery: its commit
 * acknowledges the entry too (`done` once it did), without a marker. Otherwise its marker is a
 * field of the entry's `entryDeliveries` hash.
 */
export interface EntryRef {
  id: string;
  ack: boolean;
  done: boolean;
}

/** One delivery of an event to one webhook: from a stream entry (`entry`) or a retry job (`jobMember`). */
export interface Delivery {
  readonly event: CapturedEvent;
  readonly webhookId: string;
  readonly condition: RetryJob['condition'];
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** The retry job it runs, removed from the retry set when it settles; null for a first attempt. */
  readonly jobMember: string | null;
  readonly entry?: EntryRef;
}

/** What makes a delivery, and the way out for one that cannot be processed (the worker). */
export interface DeliveryWork {
  deliver(delivery: Delivery): Promise<void>;
  finalizeUnprocessable(delivery: Delivery, error: unknown): Promise<void>;
}

/** A delivery, or, when it fails for a reason other than Redis being away, its `failed` entry. */
export function deliverOrFinalize(work: DeliveryWork, delivery: Delivery): Promise<void> {
  return work.deliver(delivery).catch((e: unknown) => work.finalizeUnprocessable(delivery, e));
}
