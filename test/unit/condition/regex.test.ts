import { describe, expect, it } from 'vitest';
import { exchangeFromParts, linearEngineAvailable, parseCondition } from '../../../src/condition/index.js';
import { compileUserRegex } from '../../../src/condition/regex/linear-regex.js';
import { RegexSyntaxError } from '../../../src/condition/regex/java-regex-syntax.js';
import { matches, syntaxError } from './helpers.js';

const refusal = (pattern: string): string => {
  try {
    compileUserRegex(pattern, { caseSensitive: true, fullMatch: false });
  } catch (error) {
    if (error instanceof RegexSyntaxError) return error.message;
    throw error;
  }
  throw new Error(`expected ${pattern} to be refused`);
};

describe('regex predicate', () => {
  it('finds a match anywhere in %R by default', () => {
    expect(matches("regex('^/api/v[0-9]+/')", { path: '/api/v2/users' })).toBe(true);
    expect(matches("regex('v[0-9]+')", { path: '/api/v2/users' })).toBe(true);
    expect(matches("regex('^/v[0-9]+')", { path: '/api/v2/users' })).toBe(false);
  });

  it('needs the whole value with full-match=true (Java matches(), alternation included)', () => {
    expect(matches("regex(pattern='/a', full-match=true)", { path: '/a/b' })).toBe(false);
    expect(matches("regex(pattern='/a/.*', full-match=true)", { path: '/a/b' })).toBe(true);
    expect(matches("regex(pattern='/a|/a/b', full-match=true)", { path: '/a/b' })).toBe(true);
  });

  it('is case-insensitive on request (ASCII letters, as Java by default)', () => {
    expect(matches("regex(pattern='/API/', case-sensitive=false)", { path: '/api/x' })).toBe(true);
    expect(matches("regex(pattern='[A-C]x', case-sensitive=false)", { path: '/bX' })).toBe(true);
    expect(matches("regex(pattern='[^a]', case-sensitive=false, full-match=true)", { path: 'A' })).toBe(false);
    expect(matches("regex('(?i)^/API')", { path: '/Api' })).toBe(true);
    expect(matches("regex('/API/')", { path: '/api/x' })).toBe(false);
  });

  it('matches another attribute with value=, and is false when it is absent', () => {
    expect(matches("regex(pattern='^Mozilla', value=%{i,User-Agent})", { headers: { 'User-Agent': 'Mozilla/5.0' } })).toBe(true);
    expect(matches("regex(pattern='.*', value=%{i,User-Agent})")).toBe(false);
  });

  it('binds ${0}, ${1}... and $1 for later predicates', () => {
    const condition = "regex[pattern='/publicdb/(.*?)/.*', value='%R', full-match=false] and equals[%{i,username}, ${1}]";
    expect(matches(condition, { path: '/publicdb/foo/bar', headers: { username: 'foo' } })).toBe(true);
    expect(matches(condition, { path: '/publicdb/foo/bar', headers: { username: 'bar' } })).toBe(false);
    expect(matches("regex('a(b*)a*') and equals($1, bbb) and equals(${0}, abbb)", { path: '/abbb' })).toBe(true);
    expect(matches("regex('a(x)?b') and equals(${1}, %{NULL})", { path: '/ab' })).toBe(true);
  });

  it('translates Java-only syntax', () => {
    expect(matches("regex(pattern='\\Aa\\.b\\z', value=%{i,X})", { headers: { X: 'a.b' } })).toBe(true);
    expect(matches("regex(pattern='\\Qa.b\\E', value=%{i,X})", { headers: { X: 'axb' } })).toBe(false);
    expect(matches("regex(pattern='^\\Qa.b\\E$', value=%{i,X})", { headers: { X: 'a.b' } })).toBe(true);
    // Java's \s is ASCII only.
    expect(matches("regex(pattern='a\\sb', value=%{i,X})", { headers: { X: 'a\u00a0b' } })).toBe(false);
    expect(matches("regex(pattern='a\\hb', value=%{i,X})", { headers: { X: 'a\u00a0b' } })).toBe(true);
  });

  it('unrolls counted repetition beyond the engine limit', () => {
    expect(matches("regex('^/c/[0-9a-f]{24}$')", { path: '/c/0123456789abcdef01234567' })).toBe(true);
    expect(matches("regex('^/c/[0-9a-f]{24}$')", { path: '/c/0123456789abcdef0123456' })).toBe(false);
    expect(matches("regex('^/(?:ab){2,20}$')", { path: '/' + 'ab'.repeat(20) })).toBe(true);
    expect(matches("regex('^/(?:ab){2,20}$')", { path: '/' + 'ab'.repeat(21) })).toBe(false);
    expect(matches("regex('^/x{17,}$')", { path: '/' + 'x'.repeat(16) })).toBe(false);
    expect(matches("regex('^/x{17,}$')", { path: '/' + 'x'.repeat(40) })).toBe(true);
    expect(matches("regex('^/(ab){20}$') and equals(${1}, ab)", { path: '/' + 'ab'.repeat(20) })).toBe(true);
  });

  it('refuses invalid patterns at parse time, pointing into the pattern', () => {
    const error = syntaxError("regex('[')");
    expect(error.message).toMatch(/unclosed character class/);
    expect(error.position).toBe(7);
    expect(syntaxError("regex(pattern='ab{')").message).toMatch(/illegal repetition/);
    expect(syntaxError("regex(pattern='*a')").message).toMatch(/nothing to repeat/);
  });
});

describe('regex safety (linear-time engine)', () => {
  it('has the linear-time engine on this Node.js', () => {
    expect(linearEngineAvailable()).toBe(true);
    expect(compileUserRegex('a+', { caseSensitive: true, fullMatch: false }).regex.flags).toContain('l');
  });

  it('compiles every user regex for the linear engine', () => {
    const { regex } = compileUserRegex('(a+)+$', { caseSensitive: false, fullMatch: true });
    expect(regex.flags).toContain('l');
    expect(regex.flags).not.toContain('i');
  });

  it('runs the classic catastrophic patterns to completion on long hostile input', () => {
    // A backtracking engine needs about 2^n steps for these; this input would never finish.
    const hostile = `${'a'.repeat(50_000)}!`;
    for (const pattern of ['(a+)+', '(a|a)*', '(a|aa)+', '(a*)*b', '(.*a){12}']) {
      const condition = parseCondition(`regex(pattern='${pattern}', value=%{i,X}, full-match=true)`);
      expect(condition.evaluate(exchangeFromParts({ headers: { X: hostile } }))).toBe(false);
    }
  });

  it('refuses what only a backtracking engine can run', () => {
    expect(refusal('(a)\\1')).toMatch(/backreferences/);
    expect(refusal('(?<n>a)\\k<n>')).toMatch(/backreferences/);
    expect(refusal('a(?=b)')).toMatch(/lookahead/);
    expect(refusal('(?<!a)b')).toMatch(/lookbehind/);
    expect(refusal('(?>a+)b')).toMatch(/atomic/);
    expect(refusal('a*+b')).toMatch(/possessive/);
    expect(refusal('a++b')).toMatch(/possessive/);
  });

  it('refuses Java syntax it cannot translate exactly', () => {
    expect(refusal('\\p{Alpha}')).toMatch(/not supported/);
    expect(refusal('[a-z&&[^e]]')).toMatch(/nested|intersection/);
    expect(refusal('[a[b]]')).toMatch(/nested/);
    expect(refusal('a\\Z')).toMatch(/\\Z/);
    expect(refusal('x(?s)y')).toMatch(/inline flags/);
  });

  it('bounds the size of a translated pattern', () => {
    expect(refusal('(?:abcdefgh){2000}')).toMatch(/too large/);
  });
});

describe('regex prefilter (what every match must contain)', () => {
  const required = (pattern: string, options = { caseSensitive: true, fullMatch: false }) => compileUserRegex(pattern, options).required;

  it('reads an anchored prefix and the longest required literal off the pattern', () => {
    expect(required('^/reports/7/[0-9]+')).toEqual({ prefix: '/reports/7/' });
    expect(required('\\A/api')).toEqual({ prefix: '/api' });
    expect(required('/orders/[0-9]+/items')).toEqual({ contains: '/orders/' });
    expect(required('^/a/[0-9]+/items/(x|y)')).toEqual({ prefix: '/a/', contains: '/items/' });
    expect(required('(?:ab)+c')).toEqual({ contains: 'ab' });
    expect(required('/api', { caseSensitive: true, fullMatch: true })).toEqual({ prefix: '/api' });
  });

  it('requires nothing where a literal is optional, alternative, case-folded or only anchored per line', () => {
    expect(required('(abc)?d')).toEqual({ contains: 'd' });
    expect(required('abc|abd')).toEqual({});
    expect(required('x*y?')).toEqual({});
    expect(required('^/api', { caseSensitive: false, fullMatch: false })).toEqual({});
    expect(required('(?i)^/api')).toEqual({});
    expect(required('(?m)^/api')).toEqual({ contains: '/api' });
  });

  it('never changes an answer: the prefiltered predicate agrees with the bare regex on every input', () => {
    const patterns = ['^/reports/7/[0-9]+', '/orders/[0-9]+/items', '^/a/[0-9]+/items/(x|y)', '(abc)?d', 'abc|abd', '(?m)^/api', 'a\\bb', '^(ab)c', '\\Qa.b\\E', 'é+x'];
    const inputs = [
      '/reports/7/12',
      '/reports/8/1',
      'x/reports/7/1',
      '/orders/1/items',
      '/orders/x/items',
      '/a/1/items/x',
      '/a/1/items/z',
      'abcd',
      'd',
      'abd',
      'xabc',
      'q\n/api',
      '/ap',
      'a b',
      'ab',
      'abc',
      'a.b',
      'axb',
      'ééx',
      'éx',
      '',
    ];
    for (const pattern of patterns) {
      const { regex } = compileUserRegex(pattern, { caseSensitive: true, fullMatch: false });
      for (const input of inputs) expect(matches(`regex(pattern='${pattern}', value=%{i,X-In})`, { headers: { 'X-In': input } }), `${pattern} on ${JSON.stringify(input)}`).toBe(regex.test(input));
    }
  });
});
