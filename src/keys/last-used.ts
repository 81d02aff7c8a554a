/**
 * SPEC §5.1: `lastUsedAt` is written at most once a minute per key per replica. Decides, in
 * memory, whether this use is the one to record: the first use of a key on this replica always
 * is (notes §A.6: a throttle must still record a key's first use), later ones only once the
 * interval has passed since the last recorded one.
 */
export class LastUsedThrottle {
  private readonly recordedAt = new Map<string, number>();

  constructor(
    private readonly intervalMs = 60_000,
    private readonly maxEntries = 100_000,
  ) {}

  /** True when this use should be written (and counts it as written). */
  shouldRecord(keyId: string, now: number): boolean {
    const last = this.recordedAt.get(keyId);
    if (last !== undefined && now - last < this.intervalMs) return false;
    if (last === undefined && this.recordedAt.size >= this.maxEntries) this.prune(now);
    this.recordedAt.set(keyId, now);
    return true;
  }

  forget(keyId: string): void {
    this.recordedAt.delete(keyId);
  }

  private prune(now: number): void {
    for (const [id, at] of this.recordedAt) if (now - at >= this.intervalMs) this.recordedAt.delete(id);
    // Still full of keys used within the minute: drop the oldest; at worst one of them is written twice.
    while (this.recordedAt.size >= this.maxEntries) this.recordedAt.delete(this.recordedAt.keys().next().value!);
  }
}
