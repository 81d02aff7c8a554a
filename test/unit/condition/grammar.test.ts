import { describe, expect, it } from 'vitest';
import { parseCondition } from '../../../src/condition/index.js';
import { matches, syntaxError } from './helpers.js';

describe('operators and precedence', () => {
  it('binds not tighter than and, and tighter than or', () => {
    // or(false, and(true, false)) = false; a left-to-right reading would give false too, so
    // check a case where precedence changes the answer: true or (false and false).
    expect(matches('true or false and false')).toBe(true);
    expect(matches('false and false or true')).toBe(true);
    expect(matches('not false and false')).toBe(false);
    expect(matches('not (false and false)')).toBe(true);
  });

  it('groups with parentheses', () => {
    expect(matches("method(GET) or method(POST) and path('/x')", { method: 'POST', path: '/y' })).toBe(false);
    expect(matches("(method(GET) or method(POST)) and path('/x')", { method: 'POST', path: '/x' })).toBe(true);
  });

  it('accepts not before a parenthesis, and not not only with parentheses (Undertow quirk)', () => {
    expect(matches('not (not true)')).toBe(true);
    expect(matches('true and not false')).toBe(true);
    const error = syntaxError('not not true');
    expect(error.message).toMatch(/not \(not x\)/);
    expect(error.position).toBe(4);
  });

  it('short-circuits and/or left to right', () => {
    // If the right side were evaluated first, ${id} would be bound and the result true.
    expect(matches("equals(${id}, 7) and path-template('/u/{id}')", { path: '/u/7' })).toBe(false);
    expect(matches("path-template('/u/{id}') and equals(${id}, 7)", { path: '/u/7' })).toBe(true);
  });

  it('accepts true, false and true() as literals', () => {
    expect(matches('true')).toBe(true);
    expect(matches('false')).toBe(false);
    expect(matches('true()')).toBe(true);
    expect(matches('(true)')).toBe(true);
  });

  it('keeps keywords lower-case only, with a hint', () => {
    expect(syntaxError('TRUE').message).toMatch(/lower-case/);
    expect(syntaxError('path(/a) AND path(/b)').message).toMatch(/operators are lower-case \(and\)/);
    expect(syntaxError("PATH('/a')").message).toMatch(/no predicate named PATH/);
  });

  it('continues an expression on the next line when the line starts with an operator', () => {
    expect(matches("method(GET)\n  and path('/a')", { path: '/a' })).toBe(true);
    expect(matches("method(GET)\nor path('/a')", { method: 'PUT', path: '/a' })).toBe(true);
    expect(syntaxError("method(GET)\npath('/a')").position).toBe(12);
  });

  it('ignores comment lines and newlines inside brackets', () => {
    expect(matches('# allow reads\nmethod(GET)')).toBe(true);
    expect(matches("path-prefix(path={\n  '/a',\n  '/b'\n})", { path: '/b/1' })).toBe(true);
  });
});

describe('predicate calls', () => {
  it('takes a positional value for the default parameter', () => {
    expect(matches('path(/a/b)', { path: '/a/b' })).toBe(true);
    expect(matches("path['/a/b']", { path: '/a/b' })).toBe(true);
  });

  it('takes several positional values as a list', () => {
    expect(matches("path-suffix('.json', '.xml')", { path: '/a.xml' })).toBe(true);
    expect(matches('method({PUT, PATCH})', { method: 'PATCH' })).toBe(true);
  });

  it('takes named parameters, with {a, b} lists, in either bracket style', () => {
    expect(matches('method(value={PUT, PATCH})', { method: 'PUT' })).toBe(true);
    expect(matches('contains[value="%{i,Content-Type}", search={text, "other text"}]', { headers: { 'Content-Type': 'application/other text' } })).toBe(true);
  });

  it('lets the last of a repeated named parameter win', () => {
    expect(matches('path(path=/a, path=/b)', { path: '/b' })).toBe(true);
    expect(matches('path(path=/a, path=/b)', { path: '/a' })).toBe(false);
  });

  it('wraps a single value given to a list parameter, and accepts an empty list that never matches', () => {
    expect(matches('method(value=GET)')).toBe(true);
    expect(matches('method({})')).toBe(false);
    expect(matches('path-prefix({})', { path: '/x' })).toBe(false);
  });

  it('allows bare no-parameter predicates and empty brackets', () => {
    expect(matches('idempotent')).toBe(true);
    expect(matches('idempotent()')).toBe(true);
    expect(matches('secure', { secure: true })).toBe(true);
  });

  it('refuses a bare predicate directly before ) , = [ ] (Undertow quirk)', () => {
    const error = syntaxError('(idempotent)');
    expect(error.position).toBe(11);
  });

  it('treats a quoted operator word as the operator where a named value is expected', () => {
    expect(syntaxError("method(value='and')").position).toBe(13);
    // ...but as a plain value in positional form.
    expect(matches("method('and')", { method: 'and' })).toBe(true);
  });

  it('reads any case of true as true for boolean parameters, anything else as false', () => {
    expect(matches("regex(pattern='/a', full-match=TRUE)", { path: '/a/b' })).toBe(false);
    expect(matches("regex(pattern='/a', full-match=yes)", { path: '/a/b' })).toBe(true);
    expect(matches("regex(pattern='/API', case-sensitive=no)", { path: '/api' })).toBe(true);
  });

  it('drops named values written before a positional list (Undertow quirk)', () => {
    expect(matches('path(path=/x, /a, /b)', { path: '/a' })).toBe(true);
    expect(matches('path(path=/x, /a, /b)', { path: '/x' })).toBe(false);
  });
});

describe('quoting', () => {
  it('accepts single and double quotes, with the other kind literal inside', () => {
    expect(matches(`equals(%{i,X}, "it's")`, { headers: { X: "it's" } })).toBe(true);
    expect(matches(`equals(%{i,X}, 'say "hi"')`, { headers: { X: 'say "hi"' } })).toBe(true);
  });

  it('escapes the delimiter with a backslash', () => {
    expect(matches(`equals(%{i,X}, 'it\\'s')`, { headers: { X: "it's" } })).toBe(true);
  });

  it('needs quotes for values with spaces', () => {
    expect(matches("equals(%{i,X}, 'a b')", { headers: { X: 'a b' } })).toBe(true);
  });

  it('gives an empty quoted value', () => {
    expect(matches("equals(%{q,a}, '')", { path: '/?a=' })).toBe(true);
  });
});

describe('syntax errors and positions', () => {
  const cases: Array<[string, number, RegExp]> = [
    ['', 0, /empty/],
    ['path(/a', 7, /end of input/],
    ["path('/a'))", 10, /no '\(' to close/],
    ['path(/a"b")', 7, /quote/],
    ['path()', 0, /required parameters \[path\]/],
    ['contains(%U, admin)', 0, /no positional value/],
    ['path(x=/a)', 5, /unknown parameter x/],
    ['exists(value={%U})', 13, /single value, not a list/],
    ["path('/a') -> true", 11, /handler syntax/],
    ['qparams-size(two)', 13, /must be an integer/],
    ['path(/a) path(/b)', 9, /joined with and/],
    ['and path(/a)', 0, /missing an operand/],
    ['foo(1)', 0, /no predicate named foo; known predicates are .*path-prefix/],
    ["regex('a(b')", 8, /unclosed group/],
    ['}', 0, /unexpected '}'/],
  ];
  it.each(cases)('%j fails at %i', (expression, position, message) => {
    const error = syntaxError(expression);
    expect(error.message).toMatch(message);
    expect(error.position).toBe(position);
    expect(error.source).toBe(expression);
  });

  it('is an HTTP 400 error with a stable code', () => {
    const error = syntaxError('path(');
    expect(error.status).toBe(400);
    expect(error.code).toBe('INVALID_CONDITION');
  });

  it('keeps the source text on the parsed condition', () => {
    expect(parseCondition('method(GET)').source).toBe('method(GET)');
  });
});

describe('limits', () => {
  it('refuses conditions nested too deeply to evaluate safely, and over-long ones', () => {
    const chain = Array.from({ length: 1500 }, () => 'true').join(' and ');
    expect(syntaxError(chain).message).toMatch(/nests deeper/);
    expect(syntaxError('true or '.repeat(5000) + 'true').message).toMatch(/longer than/);
    expect(syntaxError(`regex('${'('.repeat(150)}a${')'.repeat(150)}')`).message).toMatch(/nest deeper/);
  });

  it('evaluates a long but reasonable chain', () => {
    const chain = Array.from({ length: 500 }, (_, i) => `path-prefix(/p${i})`).join(' or ');
    expect(matches(chain, { path: '/p499/x' })).toBe(true);
  });
});
