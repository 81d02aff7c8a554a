import { describe, expect, it } from 'vitest';
import { decodeExtendedJson, encodeExtendedJson, idKey, newObjectIdHex, ObjectIdValue } from '../../../examples/standin-backend/extended-json.js';
import { parseRelaxedJson } from '../../../examples/standin-backend/relaxed-json.js';

describe('parseRelaxedJson', () => {
  it('parses strict JSON as JSON.parse does', () => {
    expect(parseRelaxedJson('{"a":[1,2.5,-3e2,true,null,"x\\n"]}')).toEqual({ a: [1, 2.5, -300, true, null, 'x\n'] });
  });

  it("accepts the Mongo shell forms RESTHeart's parser accepts", () => {
    expect(parseRelaxedJson("{'a': 'it\\'s', b: {$gt: 1}, 'c.d': [ 'x' ]}")).toEqual({ a: "it's", b: { $gt: 1 }, 'c.d': ['x'] });
    expect(parseRelaxedJson("{_id: ObjectId('65A000000000000000000001')}")).toEqual({ _id: { $oid: '65a000000000000000000001' } });
    expect(parseRelaxedJson("{d: ISODate('2024-01-01T00:00:00Z'), e: new Date(5), n: NumberLong('7')}")).toEqual({
      d: { $date: Date.parse('2024-01-01T00:00:00Z') },
      e: { $date: 5 },
      n: 7,
    });
  });

  it('keeps a "__proto__" key as data', () => {
    const parsed = parseRelaxedJson("{'__proto__': {polluted: true}}") as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['{a:', "{'a' 1}", '{a: 1} x', 'ObjectId("xyz")', '{a: undefinedWord}', "'unterminated"])('rejects %s with a position', (text) => {
    expect(() => parseRelaxedJson(text)).toThrow(/at position \d+/);
  });
});

describe('extended JSON', () => {
  it('decodes $oid, $date (three forms), number wrappers and $regularExpression', () => {
    const decoded = decodeExtendedJson({
      _id: { $oid: 'ABCDEFABCDEFABCDEFABCDEF' },
      a: { $date: 5 },
      b: { $date: '1970-01-01T00:00:00.010Z' },
      c: { $date: { $numberLong: '15' } },
      n: [{ $numberLong: '9' }, { $numberDecimal: '1.5' }],
      r: { $regularExpression: { pattern: '^x', options: 'i' } },
      plain: { $gt: 1, nested: { k: 'v' } },
    }) as Record<string, unknown>;
    expect(decoded._id).toEqual(new ObjectIdValue('abcdefabcdefabcdefabcdef'));
    expect(decoded.a).toEqual(new Date(5));
    expect(decoded.b).toEqual(new Date(10));
    expect(decoded.c).toEqual(new Date(15));
    expect(decoded.n).toEqual([9, 1.5]);
    expect(decoded.r).toEqual(/^x/i);
    expect(decoded.plain).toEqual({ $gt: 1, nested: { k: 'v' } });
  });

  it('encodes native values back and leaves extended JSON objects alone', () => {
    expect(encodeExtendedJson({ d: new Date(3), o: new ObjectIdValue('a'.repeat(24)), keep: { $date: '2024-01-01T00:00:00Z' } })).toEqual({
      d: { $date: 3 },
      o: { $oid: 'a'.repeat(24) },
      keep: { $date: '2024-01-01T00:00:00Z' },
    });
  });

  it('generates distinct, time-ordered ObjectIds', () => {
    const ids = Array.from({ length: 100 }, newObjectIdHex);
    expect(new Set(ids).size).toBe(100);
    ids.forEach((id) => expect(id).toMatch(/^[0-9a-f]{24}$/));
    expect(parseInt(ids[0]!.slice(0, 8), 16)).toBeCloseTo(Date.now() / 1000, -1);
  });

  it('keys ids by type: an ObjectId and its hex string differ', () => {
    expect(idKey({ $oid: 'a'.repeat(24) })).not.toBe(idKey('a'.repeat(24)));
    expect(idKey({ $oid: 'A'.repeat(24) })).toBe(idKey({ $oid: 'a'.repeat(24) }));
    expect(idKey(1)).not.toBe(idKey('1'));
  });
});
