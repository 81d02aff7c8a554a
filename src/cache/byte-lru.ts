/**
 * A least-recently-used map bounded by bytes (`cache.maxBytes`): a Map keeps insertion order, a
 * read moves its key to the end, and the oldest keys go first when a new value would pass the
 * budget. lru-cache v11 (what the brief named) is not installed and the lru-cache at the top of
 * node_modules is v5, a dependency of a dependency; this is the few lines that part needs
 * (docs/decisions.md).
 */
export class ByteLru<V extends { readonly size: number }> {
  private readonly map = new Map<string, V>();
  private used = 0;

  constructor(
    readonly maxBytes: number,
    /** Every value that leaves, and whether it was pushed out for room (an eviction) rather than deleted. */
    private readonly removed: (value: V, evicted: boolean) => void = () => {},
  ) {}

  get bytes(): number {
    return this.used;
  }

  get count(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** Stores unless the value alone is larger than the budget; older values are evicted to make room. */
  set(key: string, value: V): boolean {
    if (value.size > this.maxBytes) return false;
    this.delete(key);
    while (this.used + value.size > this.maxBytes) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      const gone = this.map.get(oldest.value)!;
      this.map.delete(oldest.value);
      this.used -= gone.size;
      this.removed(gone, true);
    }
    this.map.set(key, value);
    this.used += value.size;
    return true;
  }

  delete(key: string): void {
    const value = this.map.get(key);
    if (value === undefined) return;
    this.map.delete(key);
    this.used -= value.size;
    this.removed(value, false);
  }

  /** Deletes every value `drop` says so of (a reload removed or changed its rule). */
  deleteWhere(drop: (value: V) => boolean): void {
    for (const [key, value] of [...this.map]) if (drop(value)) this.delete(key);
  }

  clear(): void {
    const values = [...this.map.values()];
    this.map.clear();
    this.used = 0;
    for (const value of values) this.removed(value, false);
  }
}
