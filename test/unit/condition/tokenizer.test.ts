import { describe, expect, it } from 'vitest';
import { ConditionSyntaxError } from '../../../src/condition/index.js';
import { tokenize } from '../../../src/condition/syntax/tokenizer.js';

const texts = (source: string): string[] => tokenize(source).map((token) => token.text);

describe('tokenizer', () => {
  it('splits words on spaces and tabs and makes brackets, commas and = tokens of their own', () => {
    expect(texts("path-prefix(path={'/a',b}) and\tnot x")).toEqual(['path-prefix', '(', 'path', '=', '{', '/a', ',', 'b', '}', ')', 'and', 'not', 'x']);
  });

  it('keeps %{...} and ${...} whole, commas and dashes included', () => {
    expect(texts('equals(%{i,Content-Type}, ${a-b})')).toEqual(['equals', '(', '%{i,Content-Type}', ',', '${a-b}', ')']);
  });

  it('still splits an attribute at whitespace', () => {
    expect(texts('x(%{i, X})')).toEqual(['x', '(', '%{i,', 'X}', ')']);
  });

  it('groups quoted text, with the other quote kind literal and \\" escaping the delimiter', () => {
    expect(texts(`a("it's", 'say \\'hi\\'', "a\\b")`)).toEqual(['a', '(', "it's", ',', "say 'hi'", ',', 'a\\b', ')']);
  });

  it('makes an empty token of empty quotes, and a quoted word is indistinguishable from a bare one', () => {
    const tokens = tokenize("'' 'and'");
    expect(tokens.map((t) => t.text)).toEqual(['', 'and']);
    expect(tokens.map((t) => t.quoted)).toEqual([true, true]);
  });

  it('refuses a quote inside a word, pointing at the quote', () => {
    let error: unknown;
    try {
      tokenize('path(/a"b")');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConditionSyntaxError);
    expect((error as ConditionSyntaxError).position).toBe(7);
  });

  it('emits newlines at top level only, and drops them inside brackets', () => {
    expect(texts('a\nb')).toEqual(['a', '\n', 'b']);
    expect(texts('a(b,\n c)')).toEqual(['a', '(', 'b', ',', 'c', ')']);
  });

  it('treats # as a comment only at the start of a line', () => {
    expect(texts('# comment (with brackets\nmethod(GET)')).toEqual(['\n', 'method', '(', 'GET', ')']);
    expect(texts('  # indented comment\nx')).toEqual(['\n', 'x']);
    expect(texts('path-suffix(#top)')).toEqual(['path-suffix', '(', '#top', ')']);
  });

  it('recognises the handler arrow outside attributes only', () => {
    expect(texts('a -> b')).toEqual(['a', '->', 'b']);
    expect(texts('%{i,a->b}')).toEqual(['%{i,a->b}']);
  });

  it('keeps an unterminated string as a token', () => {
    expect(texts("path('/a")).toEqual(['path', '(', '/a']);
  });

  it('records where each token starts', () => {
    const tokens = tokenize("path( '/x' )");
    expect(tokens.map((t) => [t.text, t.position, t.textPosition])).toEqual([
      ['path', 0, 0],
      ['(', 4, 4],
      ['/x', 6, 7],
      [')', 11, 11],
    ]);
  });
});
