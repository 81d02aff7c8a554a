import { describe, expect, it } from 'vitest';
import { parseIdempotencyKey } from '../../../src/idempotency/key.js';

const problem = (value: string) => {
  const parsed = parseIdempotencyKey(value);
  expect(parsed).toHaveProperty('problem');
  const text = (parsed as { problem: string }).problem;
  expect(text).toContain('Idempotency-Key');
  return text;
};

describe('parseIdempotencyKey', () => {
  it('is undefined when the header is absent', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
  });

  it('reads a Structured Field string and a bare token', () => {
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toEqual({ key: '8e03978e-40d5-43e8-bc93-6894a57f9324' });
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toEqual({ key: '8e03978e-40d5-43e8-bc93-6894a57f9324' });
    expect(parseIdempotencyKey('  "a b"\t')).toEqual({ key: 'a b' });
    expect(parseIdempotencyKey('"say \\"hi\\" \\\\ ok"')).toEqual({ key: 'say "hi" \\ ok' });
    expect(parseIdempotencyKey('order:42/retry')).toEqual({ key: 'order:42/retry' });
  });

  it('keeps a quoted and a bare key of the same text the same key', () => {
    expect(parseIdempotencyKey('"abc"')).toEqual(parseIdempotencyKey('abc'));
  });

  it('accepts 255 characters and refuses 256', () => {
    expect(parseIdempotencyKey(`"${'k'.repeat(255)}"`)).toEqual({ key: 'k'.repeat(255) });
    expect(parseIdempotencyKey('k'.repeat(255))).toEqual({ key: 'k'.repeat(255) });
    expect(problem(`"${'k'.repeat(256)}"`)).toMatch(/256 characters.*at most 255/);
    expect(problem('k'.repeat(256))).toMatch(/256 characters/);
  });

  it('refuses an empty value and an empty string', () => {
    expect(problem('')).toMatch(/empty/);
    expect(problem('   ')).toMatch(/empty/);
    expect(problem('""')).toMatch(/empty/);
  });

  it('refuses control characters, DEL and non-ASCII, quoted or bare', () => {
    expect(problem('"a\u0001b"')).toMatch(/control character \(0x01\)/);
    expect(problem('a\u0000b')).toMatch(/control character \(0x00\)/);
    expect(problem('"a\rb"')).toMatch(/control character \(0x0d\)/);
    expect(problem('a\u007fb')).toMatch(/control character \(0x7f\)/);
    expect(problem('"caf\u00e9"')).toMatch(/non-ASCII/);
    expect(problem('caf\u00e9')).toMatch(/non-ASCII/);
  });

  it('refuses two headers (node joins them with a comma) and a list', () => {
    expect(problem('"a", "b"')).toMatch(/two Idempotency-Key headers/);
    expect(problem('a, b')).toMatch(/whitespace|comma/);
    expect(problem('a,b')).toMatch(/comma/);
  });

  it('refuses a broken string: unclosed, bad escape, text after the quote, a space in a bare token', () => {
    expect(problem('"abc')).toMatch(/does not close/);
    expect(problem('"a\\nb"')).toMatch(/backslash/);
    expect(problem('"abc";x=1')).toMatch(/after its closing quote/);
    expect(problem('a b')).toMatch(/whitespace/);
    expect(problem('a"b')).toMatch(/character/);
  });
});
