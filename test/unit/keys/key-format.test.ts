import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checksumOf, generateApiKey, hashApiKey, keyFormatProblem, keyStart, toBase62 } from '../../../src/keys/key-format.js';

/** An independent CRC32 (bitwise, no table) and base62, to cross-check the module's checksum. */
function referenceCrc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'ascii')) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function referenceBase62(n: number, width: number): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  do {
    out = alphabet[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(width, '0');
}

describe('API key format', () => {
  it('is <prefix>_<43 base62 chars><6-char checksum>, only [A-Za-z0-9_]', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey('rig');
      expect(key).toMatch(/^rig_[0-9A-Za-z]{49}$/);
      expect(keyFormatProblem(key, 'rig')).toBeNull();
    }
  });

  it('carries 256 random bits: keys do not repeat and use the whole alphabet', () => {
    const keys = new Set(Array.from({ length: 2000 }, () => generateApiKey('rig')));
    expect(keys.size).toBe(2000);
    const seen = new Set([...keys].flatMap((k) => [...k.slice(4, 47)]));
    expect(seen.size).toBe(62);
  });

  it('ends with the base62 CRC32 of the random part, as GitHub tokens do', () => {
    const key = generateApiKey('rig');
    const random = key.slice(4, 47);
    expect(key.slice(47)).toBe(referenceBase62(referenceCrc32(random), 6));
    expect(checksumOf('abc')).toBe(referenceBase62(0x352441c2, 6)); // crc32("abc") = 0x352441c2
  });

  it('encodes base62 big-endian, left-padded with 0', () => {
    expect(toBase62(0n, 3)).toBe('000');
    expect(toBase62(61n, 2)).toBe('0z');
    expect(toBase62(62n, 2)).toBe('10');
    expect(toBase62(2n ** 256n - 1n, 43)).toHaveLength(43);
  });

  it('rejects a key with any single character changed (checksum)', () => {
    const key = generateApiKey('rig');
    let rejected = 0;
    for (let i = 4; i < key.length; i++) {
      const replacement = key[i] === 'a' ? 'b' : 'a';
      const typo = key.slice(0, i) + replacement + key.slice(i + 1);
      if (keyFormatProblem(typo, 'rig') === 'checksum') rejected++;
    }
    expect(rejected).toBe(key.length - 4);
  });

  it('names what is wrong with a malformed key', () => {
    const key = generateApiKey('rig');
    expect(keyFormatProblem(key, 'abc')).toBe('prefix');
    expect(keyFormatProblem(key.replace('rig_', 'rig-'), 'rig')).toBe('prefix');
    expect(keyFormatProblem(key.slice(0, -1), 'rig')).toBe('length');
    expect(keyFormatProblem('rig_', 'rig')).toBe('length');
    expect(keyFormatProblem(`${key.slice(0, 10)}-${key.slice(11)}`, 'rig')).toBe('characters');
    expect(keyFormatProblem(`${key.slice(0, 10)}é${key.slice(11)}`, 'rig')).toBe('characters');
    expect(keyFormatProblem(`rig_${'a'.repeat(300)}`, 'rig')).toBe('length');
  });

  it('accepts a longer random part with a valid checksum (43+ characters)', () => {
    const random = 'Z'.repeat(60);
    expect(keyFormatProblem(`rig_${random}${checksumOf(random)}`, 'rig')).toBeNull();
  });

  it('stores the SHA-256 of the whole key, prefix included', () => {
    const key = generateApiKey('rig');
    expect(hashApiKey(key)).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashApiKey(key)).not.toContain(key.slice(4, 20));
  });

  it("a key's start is its prefix, _ and 8 random characters, whatever the prefix's length", () => {
    const key = generateApiKey('rig');
    expect(keyStart(key, 'rig')).toBe(key.slice(0, 12));
    expect(keyStart(key, 'rig')).toMatch(/^rig_[0-9A-Za-z]{8}$/);
    const long = generateApiKey('acme_live');
    expect(keyStart(long, 'acme_live')).toMatch(/^acme_live_[0-9A-Za-z]{8}$/);
  });
});

describe('keyFormatProblem at the length bounds (mutation testing found them unguarded)', () => {
  const withChecksum = (random: string) => `rig_${random}${checksumOf(random)}`;

  it('accepts a random part of exactly 128 characters and refuses 129 as length, each with a valid checksum', () => {
    expect(keyFormatProblem(withChecksum('a'.repeat(128)), 'rig')).toBeNull();
    expect(keyFormatProblem(withChecksum('a'.repeat(129)), 'rig')).toBe('length');
  });

  it('accepts a random part of exactly 43 characters and refuses 42 as length', () => {
    expect(keyFormatProblem(withChecksum('b'.repeat(43)), 'rig')).toBeNull();
    expect(keyFormatProblem(withChecksum('b'.repeat(42)), 'rig')).toBe('length');
  });
});
