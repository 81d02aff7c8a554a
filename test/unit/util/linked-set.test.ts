import { describe, expect, it } from 'vitest';
import { LinkedMap, LinkedSet } from '../../../src/util/linked-set.js';

describe('LinkedSet', () => {
  it('adds, removes in any order and iterates what is left, newest first', () => {
    const set = new LinkedSet<string>();
    const a = set.add('a');
    const b = set.add('b');
    const c = set.add('c');
    expect([...set]).toEqual(['c', 'b', 'a']);
    set.remove(b);
    expect([...set]).toEqual(['c', 'a']);
    set.remove(c);
    expect([...set]).toEqual(['a']);
    expect(set.size).toBe(1);
    set.remove(a);
    expect([...set]).toEqual([]);
    expect(set.size).toBe(0);
  });

  it('answers its newest and oldest members through removals at either end', () => {
    const set = new LinkedSet<string>();
    expect(set.newest).toBeNull();
    expect(set.oldest).toBeNull();
    const a = set.add('a');
    set.add('b');
    const c = set.add('c');
    expect([set.newest!.value, set.oldest!.value]).toEqual(['c', 'a']);
    expect(set.remove(a)).toBe(true);
    expect(set.remove(a)).toBe(false);
    expect(set.remove(c)).toBe(true);
    expect([set.newest!.value, set.oldest!.value]).toEqual(['b', 'b']);
    set.remove(set.oldest!);
    expect(set.newest).toBeNull();
    expect(set.oldest).toBeNull();
  });

  it('ignores a second removal of the same node', () => {
    const set = new LinkedSet<number>();
    const one = set.add(1);
    set.add(2);
    set.remove(one);
    set.remove(one);
    expect(set.size).toBe(1);
    expect([...set]).toEqual([2]);
  });

  it('lets the current member be removed while iterating', () => {
    const set = new LinkedSet<number>();
    const nodes = [1, 2, 3, 4].map((n) => set.add(n));
    const seen: number[] = [];
    for (const value of set) {
      seen.push(value);
      set.remove(nodes[value - 1]!);
    }
    expect(seen).toEqual([4, 3, 2, 1]);
    expect(set.size).toBe(0);
  });

  it('keeps no link from a removed node to the members after it', () => {
    const set = new LinkedSet<object>();
    const first = set.add({});
    set.add({});
    set.add({});
    set.remove(first);
    // A removed node that outlives its request must not hold the ones added after it (see the file's comment).
    expect(first.prev).toBeNull();
    expect(first.next).toBeNull();
  });
});

describe('LinkedMap', () => {
  it('answers has, keys, values and size as a Map would, and forgets a removed pair', () => {
    const map = new LinkedMap<string, number>();
    const a = map.set('a', 1);
    map.set('b', 2);
    expect(map.has('a')).toBe(true);
    expect(map.has('c')).toBe(false);
    expect([...map.keys()].sort()).toEqual(['a', 'b']);
    expect([...map.values()].sort()).toEqual([1, 2]);
    map.remove(a);
    expect(map.has('a')).toBe(false);
    expect(map.size).toBe(1);
    expect([...map.keys()]).toEqual(['b']);
  });
});
