import { describe, expect, it } from 'vitest';
import { isJsonObject, isPlainObject } from '../../../src/util/objects.js';

describe('the two object tests', () => {
  it('a JSON object is any non-null, non-array object', () => {
    expect(isJsonObject({})).toBe(true);
    expect(isJsonObject(Object.create(null))).toBe(true);
    expect(isJsonObject(new Date(0))).toBe(true);
    for (const v of [null, [], 'x', 1, true, undefined]) expect(isJsonObject(v)).toBe(false);
  });

  it('a plain object is an object literal: not a Date or a class instance', () => {
    expect(isPlainObject({ a: 1 })).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    expect(isPlainObject(new Date(0))).toBe(false);
    expect(isPlainObject(new (class Id {})())).toBe(false);
    for (const v of [null, [], 'x', 1, undefined]) expect(isPlainObject(v)).toBe(false);
  });
});
