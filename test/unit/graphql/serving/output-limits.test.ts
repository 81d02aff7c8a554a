/** Issue 25's output limits, piece by piece: sliced serialization, the alias cap, the parsed-query cache, the deadline. */
import { buildSchema, parse, specifiedRules } from 'graphql';
import { describe, expect, it } from 'vitest';
import { compileApp } from '../../../../src/graphql/compile/compile-app.js';
import { executeGraphql } from '../../../../src/graphql/serve/execute.js';
import { aliasLimitError } from '../../../../src/graphql/limits/aliases.js';
import { DocumentCache, PARSED_BYTES_PER_TOKEN, tokenCount } from '../../../../src/graphql/limits/document-cache.js';
import { jsonBytesBound, serializeJson } from '../../../../src/graphql/limits/serialize.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';

describe('serializeJson', () => {
  it('writes what JSON.stringify writes', async () => {
    const values: unknown[] = [
      { data: { a: [1, 'two', null, true, { b: { $oid: 'x' } }], c: undefined, d: 'é\u2028"\\\n' } },
      [undefined, () => 1, NaN, Infinity, -0, 1e21, new Date(0)],
      Object.assign(Object.create(null), { k: 'null-prototype', big: 'y'.repeat(5000) }),
      { rows: Array.from({ length: 3000 }, (_, i) => ({ i, s: `row ${i}`, nested: { deeper: [i, { e: i }] } })) },
      'plain',
      null,
    ];
    for (const v of values) expect(await serializeJson(v, 1e9)).toEqual({ ok: true, body: JSON.stringify(v) });
  });

  it('writes what JSON.stringify writes on the sliced walk too (answers past the one-shot bound)', async () => {
    const big = { rows: Array.from({ length: 60_000 }, (_, i) => ({ i, s: `row ${i} é\u0001"`, nested: { deeper: [i, null, { e: true }] } })), d: new Date(0) };
    expect(jsonBytesBound(big, 4 * 1024 * 1024)).toBe(Infinity);
    expect(await serializeJson(big, 1e9)).toEqual({ ok: true, body: JSON.stringify(big) });
  });

  it('bounds the bytes one JSON.stringify writes from above, or answers Infinity where it cannot write it at once', () => {
    const values: unknown[] = [
      { a: '\u0001\u0002\u001f', 'k\u0000"': ['\ud83d\ude00', '\ud800', 'é€', '"\\'], n: [-1.2345678901234567e308, NaN, 5e-324], u: undefined, f: () => 1 },
      [undefined, null, true, false, 0, ''],
      Object.assign(Object.create(null), { k: 'null-prototype' }),
      'x'.repeat(1000),
      undefined,
    ];
    for (const v of values) {
      const bound = jsonBytesBound(v, 1e9);
      expect(bound).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(v) ?? 'null'));
      expect(bound).toBeLessThan(1e9);
    }
    expect(jsonBytesBound({ d: new Date(0) }, 1e9)).toBe(Infinity); // toJSON: the sliced walk honours it
    expect(jsonBytesBound({ b: 1n }, 1e9)).toBe(Infinity); // JSON.stringify throws on a bigint
    expect(jsonBytesBound({ s: 'x'.repeat(100) }, 100)).toBe(Infinity);
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(jsonBytesBound(deep, 1e9)).toBe(Infinity);
  });

  it('stops past maxBytes without writing the whole answer', async () => {
    const big = { rows: Array.from({ length: 10_000 }, () => 'x'.repeat(1000)) };
    const out = await serializeJson(big, 100_000);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.bytes).toBeLessThan(200_000);
  });

  it('gives the event loop turns on a large answer', async () => {
    const big = { rows: Array.from({ length: 200_000 }, (_, i) => ({ i, s: `row ${i}`, n: { a: [i] } })) };
    let turns = 0;
    const timer = setInterval(() => turns++, 1);
    const out = await serializeJson(big, 1e9);
    clearInterval(timer);
    expect(out.ok).toBe(true);
    expect(turns).toBeGreaterThan(0);
  });
});

describe('aliasLimitError', () => {
  const aliases = (n: number) => Array.from({ length: n }, (_, i) => `a${i}: n`).join(' ');
  it('counts aliases where fragments are spread', () => {
    expect(aliasLimitError(parse(`{ x { ${aliases(100)} } }`), 100)).toBeUndefined();
    expect(aliasLimitError(parse(`{ x { ${aliases(101)} } }`), 100)?.extensions.code).toBe('TOO_MANY_ALIASES');
    expect(aliasLimitError(parse(`fragment F on X { ${aliases(40)} } { x { ...F ...F } }`), 100)).toBeUndefined();
    expect(aliasLimitError(parse(`fragment F on X { ${aliases(40)} } { x { ...F ...F ...F } }`), 100)).toBeDefined();
  });
  it('stays cheap on fragment fan-out', () => {
    const bomb = `${Array.from({ length: 40 }, (_, i) => `fragment F${i + 1} on X { b${i}: n ...F${i} ...F${i} }`).join(' ')} fragment F0 on X { n } { x { ...F40 } }`;
    // Relative to parsing the same text (linear in its length), the fastest of five of each, so a
    // loaded machine's pauses do not count (issue 40). A walk per spread visits 2^40 spreads.
    const fastest = (work: () => unknown) => {
      let best = Infinity;
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        work();
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    const document = parse(bomb);
    expect(aliasLimitError(document, 100)).toBeDefined();
    const parseMs = fastest(() => parse(bomb));
    const checkMs = fastest(() => aliasLimitError(document, 100));
    expect(checkMs, `the check took ${checkMs.toFixed(2)} ms, parsing ${parseMs.toFixed(2)} ms`).toBeLessThan(10 * parseMs + 5);
  });
});

describe('DocumentCache', () => {
  const schema = buildSchema('type Query { n: Int, x: Int }');
  it('weighs entries by parsed size, under one budget for every app', () => {
    const big = `{ ${'n '.repeat(20_000)} }`;
    expect(tokenCount(parse(big))).toBeGreaterThan(20_000);
    const cache = new DocumentCache(1000, 3 * 20_000 * PARSED_BYTES_PER_TOKEN);
    for (let i = 0; i < 10; i++) cache.prepare(`app${i % 2}`, `${big} #${i}`, schema, specifiedRules, { maxAliases: 100, hideSuggestions: false });
    expect(cache.size).toBeLessThanOrEqual(3);
    expect(cache.bytes).toBeLessThanOrEqual(3 * 20_000 * PARSED_BYTES_PER_TOKEN);
  });
  it('keeps apps apart and hides suggestions when asked', () => {
    const cache = new DocumentCache();
    const open = cache.prepare('a', '{ nn }', schema, specifiedRules, { maxAliases: 100, hideSuggestions: false });
    const closed = cache.prepare('b', '{ nn }', schema, specifiedRules, { maxAliases: 100, hideSuggestions: true });
    expect(open.validationErrors?.[0]?.message).toMatch(/Did you mean/);
    expect(closed.validationErrors?.[0]?.message).not.toMatch(/Did you mean/);
    expect(cache.prepare('a', '{ nn }', schema, specifiedRules, { maxAliases: 100, hideSuggestions: false })).toBe(open);
  });
});

describe('the deadline inside execution', () => {
  it('answers 504 and stops completing once timeoutMs has passed, even while completion is synchronous', async () => {
    // Each value read is counted, so the test asserts how much completion ran, not how long it
    // took (wall-clock ratios move with the machine's load).
    let reads = 0;
    const docs = Array.from({ length: 1000 }, (_, i) => ({
      _id: i,
      get n() {
        reads++;
        return i;
      },
    }));
    const checked = validateAppDocument(
      { descriptor: { uri: 'd' }, schema: 'type D { n: Int } type Query { ds(limit: Int): [D] }', mappings: { Query: { ds: { collection: 'd', limit: { $arg: 'limit' } } } } },
      { defaultDb: 'restheart', maxLimit: 1000 },
    );
    if (!checked.ok) throw new Error(checked.problems.join('; '));
    const fields = Array.from({ length: 1000 }, (_, i) => `a${i}: n`).join(' ');
    const run = async (timeoutMs: number) => {
      const app = compileApp(checked.app, { reader: { find: async () => docs }, timeoutMs, maxAliases: 10_000, maxCost: { reads: 1e9, documents: 1e9, output: 1e9 } });
      reads = 0;
      const started = performance.now();
      const out = await executeGraphql(app, { query: `{ ds(limit: 1000) { ${fields} } }` }, {});
      return { status: out.status, ms: performance.now() - started, reads };
    };
    const unbounded = await run(600_000);
    expect(unbounded.status).toBe(200);
    expect(unbounded.reads).toBe(1_000_000);
    const bounded = await run(20);
    expect(bounded.status).toBe(504);
    console.log(`1,000,000 values: ${unbounded.ms.toFixed(0)} ms to complete; with timeoutMs 20: 504 after ${bounded.ms.toFixed(0)} ms, ${bounded.reads} values read`);
    // Before issue 25 the timer fired only after the synchronous completion had run to its end.
    expect(bounded.reads).toBeLessThan(unbounded.reads / 2);
  }, 60_000);
});
