/**
 * The worker's event slots: at most `size` events are being delivered at once. A stream entry
 * may hold many events (stream-record.ts version 4) and is read whole, so its events take a slot
 * each before they start, and wait here, in order, when none is free: the concurrency holds
 * whatever the entries hold, and the read loop reads again only once slots are free.
 */
export class EventSlots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly size: number,
    /** Called after every release (the read loop waits for free slots). */
    private readonly released: () => void,
  ) {}

  /** Slots neither taken nor promised to a waiting event; negative while events wait. */
  get free(): number {
    return this.size - this.active - this.waiting.length;
  }

  /** Null when a slot was free (taken at once, no promise made); else resolves when one is handed over. */
  acquire(): Promise<void> | null {
    if (this.active < this.size && this.waiting.length === 0) {
      this.active++;
      return null;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Gives a slot back: to the first waiting event, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
    this.released();
  }
}
