/** A small LRU map bounded by entry count and by a total weight (e.g. bytes of the keys). */
export class LruCache<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private totalWeight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight = Infinity,
  ) {}

  get size(): number {
    return this.map.size;
  }

  /** The total weight of the entries held. */
  get weight(): number {
    return this.totalWeight;
  }

  get(key: K): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }

  set(key: K, value: V, weight = 0): void {
    if (weight > this.maxWeight || this.maxEntries <= 0) return;
    const old = this.map.get(key);
    if (old) {
      this.totalWeight -= old.weight;
      this.map.delete(key);
    }
    this.map.set(key, { value, weight });
    this.totalWeight += weight;
    while (this.map.size > this.maxEntries || this.totalWeight > this.maxWeight) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      const entry = this.map.get(oldest.value);
      this.map.delete(oldest.value);
      this.totalWeight -= entry?.weight ?? 0;
    }
  }
}
