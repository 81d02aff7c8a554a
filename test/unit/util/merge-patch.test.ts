import { describe, expect, it } from 'vitest';
import { applyMergePatch } from '../../../src/util/merge-patch.js';

describe('applyMergePatch (RFC 7396)', () => {
  // The examples of RFC 7396 appendix A.
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('%j + %j = %j', (target, patch, expected) => {
    expect(applyMergePatch(target, patch)).toEqual(expected);
  });

  it('does not modify its arguments', () => {
    const target = { a: { b: 1, c: [1, 2] }, d: 'x' };
    const patch = { a: { b: null, e: { f: 1 } }, g: [{ h: null }] };
    const t = JSON.stringify(target);
    const p = JSON.stringify(patch);
    const result = applyMergePatch(target, patch) as Record<string, any>;
    expect(result).toEqual({ a: { c: [1, 2], e: { f: 1 } }, d: 'x', g: [{ h: null }] });
    expect(JSON.stringify(target)).toBe(t);
    expect(JSON.stringify(patch)).toBe(p);
    result.g[0].h = 5;
    expect(patch.g[0]!.h).toBeNull();
  });

  it('treats "__proto__" as plain data', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}');
    const result = applyMergePatch({}, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(result, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((result as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
