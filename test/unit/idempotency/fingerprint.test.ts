import { describe, expect, it } from 'vitest';
import { bodyPart, canonicalJson, fingerprintOf } from '../../../src/idempotency/fingerprint.js';

describe('canonicalJson', () => {
  it('sorts members recursively and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('makes objects differing only in member order one text', () => {
    expect(canonicalJson(JSON.parse('{"a":1,"b":2}'))).toBe(canonicalJson(JSON.parse('{ "b": 2, "a": 1 }')));
  });

  it('writes scalars as JSON does and drops undefined members', () => {
    expect(canonicalJson('x"y')).toBe('"x\\"y"');
    expect(canonicalJson(1.5)).toBe('1.5');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
  });
});

describe('fingerprintOf', () => {
  it('is a SHA-256 hex that tells part boundaries apart', () => {
    const one = fingerprintOf(['POST', '/a?x=1', Buffer.from('{}')]);
    expect(one).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprintOf(['POST', '/a?x=1', Buffer.from('{}')])).toBe(one);
    expect(fingerprintOf(['ab', 'c'])).not.toBe(fingerprintOf(['a', 'bc']));
    expect(fingerprintOf(['PATCH', '/a?x=1', Buffer.from('{}')])).not.toBe(one);
    expect(fingerprintOf(['POST', '/a?x=2', Buffer.from('{}')])).not.toBe(one);
  });
});

describe('bodyPart', () => {
  it('canonicalizes a JSON body and keeps any other body as its bytes', () => {
    expect(bodyPart(Buffer.from('{"b":1, "a":2}'), 'application/json')).toBe('{"a":2,"b":1}');
    expect(bodyPart(Buffer.from('{"b":1}'), 'application/merge-patch+json; charset=utf-8')).toBe('{"b":1}');
    expect(bodyPart(Buffer.from('{"b":1, "a":2}'), 'text/plain')).toEqual(Buffer.from('{"b":1, "a":2}'));
    expect(bodyPart(Buffer.from('{not json'), 'application/json')).toEqual(Buffer.from('{not json'));
    expect(bodyPart(Buffer.alloc(0), 'application/json')).toEqual(Buffer.alloc(0));
  });
});
