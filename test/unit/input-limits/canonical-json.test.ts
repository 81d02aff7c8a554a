import { describe, expect, it } from 'vitest';
import { isCanonicalJson } from '../../../src/input-limits/canonical-json.js';

/** A small deterministic generator, so a failure names a seed that reproduces it. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 0x100000000;
  };
}

const STRING_PIECES = ['a', 'Zz', ' ', '"', '\\', '/', '\n', '\t', '\b', '\f', '\r', '\u0000', '\u001f', '\u007f', 'é', '\u2028', '😀', '\ud800', '\udc00', 'key', '1'];
const NUMBERS = [0, -0, 1, -1, 7, 42, 0.1, 1.5, -2.25, 1e21, 1e-7, 123456789012345, 1234567890123456, 2 ** 53 + 2, 5e-324, 1.7976931348623157e308, 100, 1e6];

function randomString(next: () => number): string {
  let s = '';
  const n = Math.floor(next() * 4);
  for (let i = 0; i < n; i++) s += STRING_PIECES[Math.floor(next() * STRING_PIECES.length)];
  return s;
}

function randomValue(next: () => number, depth: number): unknown {
  const r = next();
  if (depth > 4 || r < 0.4) {
    const k = Math.floor(next() * 5);
    return k === 0 ? null : k === 1 ? next() < 0.5 : k === 2 ? NUMBERS[Math.floor(next() * NUMBERS.length)] : randomString(next);
  }
  if (r < 0.7) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const o: Record<string, unknown> = {};
  const n = Math.floor(next() * 5);
  for (let i = 0; i < n; i++) o[randomString(next)] = randomValue(next, depth + 1);
  return o;
}

/** Ways to spell a canonical text differently that JSON.parse still reads (most change what JSON.stringify gives back). */
const MUTATIONS: Array<(t: string, at: number) => string> = [
  (t, at) => `${t.slice(0, at)} ${t.slice(at)}`,
  (t, at) => `${t.slice(0, at)}\n${t.slice(at)}`,
  (t) => t.replace(/(\d)(?=[,\]}]|$)/, '$1.0'),
  (t) => t.replace(/(?<![\d.e+-])(\d+)(?=[,\]}]|$)/, '0$1'),
  (t) => t.replace(/(?<![\d.e+-])(\d+)(?=[,\]}]|$)/, '$1e0'),
  (t) => t.replace(/(?<![\d.e+-])(\d+)(?=[,\]}]|$)/, '-0'),
  (t) => t.replace(/e\+/, 'E+'),
  (t) => t.replace('a', '\\u0061'),
  (t) => t.replace('/', '\\/'),
  (t) => t.replace('\\n', '\\u000a'),
  (t) => t.replace('\\u001f', '\\u001F'),
  (t) => t.replace('{"', '{"dup":1,"dup":2,"'),
  (t) => t.replace(/\{"([^"\\]*)":/, '{"$1":0,"$1":'),
];

describe('isCanonicalJson', () => {
  it('says yes to what JSON.stringify writes', () => {
    for (const text of [
      'null',
      'true',
      'false',
      '0',
      '-1',
      '1.5',
      '1e+21',
      '1e-7',
      '""',
      '"\\u0000\\b\\t\\n\\f\\r\\"\\\\/é😀"',
      '[]',
      '{}',
      '[{},[],{"a":[1,{"b":null}]}]',
      '{"a":1,"b":{"a":2}}',
      '{"__proto__":1}',
    ]) {
      expect(isCanonicalJson(text), text).toBe(true);
      expect(JSON.stringify(JSON.parse(text))).toBe(text);
    }
  });

  it('says no to other spellings of the same values, and to what is not JSON', () => {
    for (const text of [
      ' 1',
      '1 ',
      '{ }',
      '[1, 2]',
      '{"a": 1}',
      '1.0',
      '01',
      '-0',
      '1E5',
      '1e5',
      '1e+5',
      '0.10',
      '.5',
      '1.',
      '+1',
      '12345678901234567',
      'NaN',
      'Infinity',
      '1e400',
      '"\\u0061"',
      '"\\/"',
      '"\\u000a"',
      '"\\u001F"',
      '"\\ud800"',
      '"\ud800"',
      '"\udc00x"',
      '"a\nb"',
      '"\\x"',
      '"abc',
      '{"a":1,"a":1}',
      '{"a":{"b":1},"a":2}',
      '',
      '[',
      '[1,]',
      '{"a"}',
      '{"a":}',
      '{,"a":1}',
      '[1]]',
      '{}x',
      'tru',
      'nul',
      "'a'",
      '{"a":1}{"b":2}',
    ]) {
      expect(isCanonicalJson(text), JSON.stringify(text)).toBe(false);
    }
  });

  it('never says yes to a text JSON.stringify would not write back unchanged (random documents, mutated)', () => {
    let yes = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const next = rng(seed);
      const canonical = JSON.stringify(randomValue(next, 0));
      // Its own text is accepted, unless it escapes a lone surrogate (left to the parser on purpose).
      if (!/\\ud[89a-f]/.test(canonical)) expect(isCanonicalJson(canonical), `seed ${seed}: ${canonical}`).toBe(true);
      const mutated = MUTATIONS[Math.floor(next() * MUTATIONS.length)]!(canonical, Math.floor(next() * (canonical.length + 1)));
      let roundTrip: string | undefined;
      try {
        roundTrip = JSON.stringify(JSON.parse(mutated));
      } catch {
        roundTrip = undefined;
      }
      const accepted = isCanonicalJson(mutated);
      if (accepted) yes++;
      expect(!accepted || roundTrip === mutated, `seed ${seed}: ${JSON.stringify(mutated)}`).toBe(true);
    }
    // The property is about yes answers: enough of them must have been checked.
    expect(yes).toBeGreaterThan(300);
  });

  it('accepts plain documents of the kind webhooks carry', () => {
    const doc = { _id: { $oid: '65f0c0ffee0000000000beef' }, name: 'Ada', tags: ['a', 'b'], total: 12.5, count: 3, ok: true, nested: { list: [{ x: 1 }, { x: 2 }] } };
    expect(isCanonicalJson(JSON.stringify(doc))).toBe(true);
    expect(isCanonicalJson(JSON.stringify([doc, doc, doc]))).toBe(true);
  });

  it('bounds nesting and object width, and leaves those texts to the parser', () => {
    expect(isCanonicalJson(`${'['.repeat(100)}${']'.repeat(100)}`)).toBe(true);
    expect(isCanonicalJson(`${'['.repeat(101)}${']'.repeat(101)}`)).toBe(false);
    expect(isCanonicalJson(`${'['.repeat(5)}${']'.repeat(5)}`, 4)).toBe(false);
    const wide = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));
    expect(isCanonicalJson(wide(64))).toBe(true);
    expect(isCanonicalJson(wide(65))).toBe(false);
    // Nested objects each get their own 64 names; a sibling after a closed object starts afresh.
    expect(isCanonicalJson(JSON.stringify({ a: JSON.parse(wide(64)), b: JSON.parse(wide(64)) }))).toBe(true);
    expect(isCanonicalJson('{"a":{"x":1},"b":{"x":1},"x":{"a":1}}')).toBe(true);
    expect(isCanonicalJson('{"a":{"x":1},"x":2,"a":3}')).toBe(false);
  });
});

describe('isCanonicalJson: decimals decided without converting', () => {
  it('agrees with String(Number(x)) on every short decimal spelling', () => {
    const next = rng(99);
    let checked = 0;
    for (let k = 0; k < 20000; k++) {
      const intPart = next() < 0.4 ? '0' : String(Math.floor(next() * 10 ** Math.floor(next() * 12)));
      const frac = Array.from({ length: 1 + Math.floor(next() * 16) }, () => (next() < 0.35 ? '0' : String(Math.floor(next() * 10)))).join('');
      const token = `${next() < 0.3 ? '-' : ''}${intPart}.${frac}`;
      const canonical = String(Number(token)) === token && token !== '-0';
      expect(isCanonicalJson(token), token).toBe(canonical);
      expect(isCanonicalJson(`[${token}]`), token).toBe(canonical);
      checked++;
    }
    expect(checked).toBe(20000);
    for (const token of ['0.000001', '0.0000012', '123456789012.345', '0.123456789012345', '-0.5', '9007199254740.993']) {
      expect(isCanonicalJson(token), token).toBe(String(Number(token)) === token);
    }
  });
});
