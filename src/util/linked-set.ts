/**
 * A set of short-lived members (requests in flight) kept as a doubly linked list: `add` answers
 * the member's node, `remove(node)` unlinks it in O(1).
 *
 * Why not a `Set`: V8's hash tables (Set, Map) rehash into a new table once deleted entries fill
 * the old one, and the old table keeps its stale entries and a pointer to its successor (for
 * live iterators). A table that reaches the old generation then keeps every later table, and
 * every request they held, alive through young-generation collections until the next full one.
 * Measured on the pass-through path (issue 30): with one `Set` of in-flight responses, 17–20 % of
 * what a process allocated survived each scavenge instead of 2–3 %, and most of it was promoted,
 * in some processes for their whole life. A removed node here points nowhere, so garbage stays
 * young.
 */
export interface LinkedSetNode<T> {
  readonly value: T;
  /** @internal */ prev: LinkedSetNode<T> | null;
  /** @internal */ next: LinkedSetNode<T> | null;
  /** @internal */ linked: boolean;
}

export class LinkedSet<T> implements Iterable<T> {
  private head: LinkedSetNode<T> | null = null;
  private tail: LinkedSetNode<T> | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(value: T): LinkedSetNode<T> {
    const node: LinkedSetNode<T> = { value, prev: null, next: this.head, linked: true };
    if (this.head !== null) this.head.prev = node;
    else this.tail = node;
    this.head = node;
    this.count++;
    return node;
  }

  /** The member added last, or null when empty. */
  get newest(): LinkedSetNode<T> | null {
    return this.head;
  }

  /** The member added first, or null when empty (a line served in order takes it). */
  get oldest(): LinkedSetNode<T> | null {
    return this.tail;
  }

  /** Unlinks the node, answering whether it was a member; a second call for the same node does nothing. */
  remove(node: LinkedSetNode<T>): boolean {
    if (!node.linked) return false;
    node.linked = false;
    if (node.prev !== null) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next !== null) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.prev = null;
    node.next = null;
    this.count--;
    return true;
  }

  /** Members from the newest; removing the current member while iterating is allowed. */
  *[Symbol.iterator](): Iterator<T> {
    let node = this.head;
    while (node !== null) {
      const next = node.next;
      yield node.value;
      node = next;
    }
  }
}

/**
 * The same list with a key per member, for work in flight that is looked up by id now and then
 * (bounded by a concurrency setting, so `has` walks at most that many nodes). Mirrors the read
 * side of a Map (`has`, `keys`, `values`, `size`) so callers read it as one.
 */
export class LinkedMap<K, V> {
  private readonly list = new LinkedSet<readonly [K, V]>();

  get size(): number {
    return this.list.size;
  }

  /** Adds the pair and answers its node, for `remove`. */
  set(key: K, value: V): LinkedSetNode<readonly [K, V]> {
    return this.list.add([key, value]);
  }

  remove(node: LinkedSetNode<readonly [K, V]>): void {
    this.list.remove(node);
  }

  has(key: K): boolean {
    for (const [k] of this.list) if (k === key) return true;
    return false;
  }

  *keys(): IterableIterator<K> {
    for (const [k] of this.list) yield k;
  }

  *values(): IterableIterator<V> {
    for (const [, v] of this.list) yield v;
  }
}
