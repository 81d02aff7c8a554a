import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * SPEC §5.1 key format, GitHub's token scheme (notes/api-keys.md §A.2) with 256 random bits:
 *
 *   <prefix>_<43 base62 chars of 32 random bytes><6 base62 chars of the CRC32 of those 43 chars>
 *
 * Base62 is `0-9A-Z a-z` (the alphabet GitHub's checksum and public scanners use), numbers are
 * big-endian and left-padded with `0`. Only `[A-Za-z0-9_]`, so a double-click selects the whole
 * key. The checksum lets Outrigger (and secret scanners) reject a mistyped or made-up key
 * without a Redis lookup; it is not a secret and proves nothing about validity.
 */
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const RANDOM_BYTES = 32;
/** ceil(256 / log2(62)): the width of 256 bits in base62. */
export const RANDOM_CHARS = 43;
export const CHECKSUM_CHARS = 6;
/** Longer random parts are accepted (SPEC: "43+"), up to a sane bound. */
const MAX_RANDOM_CHARS = 128;

const BASE62_CHAR = new Uint8Array(128);
for (let i = 0; i < BASE62.length; i++) BASE62_CHAR[BASE62.charCodeAt(i)] = 1;

/** `value` in base62, left-padded with '0' to `width` characters. */
export function toBase62(value: bigint, width: number): string {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = BASE62[Number(rest % 62n)] + out;
    rest /= 62n;
  }
  return out.padStart(width, '0');
}

export function checksumOf(randomPart: string): string {
  return toBase62(BigInt(crc32(randomPart)), CHECKSUM_CHARS);
}

/** A new key: 256 bits from the CSPRNG, with its checksum. */
export function generateApiKey(prefix: string): string {
  const random = toBase62(BigInt(`0x${randomBytes(RANDOM_BYTES).toString('hex')}`), RANDOM_CHARS);
  return `${prefix}_${random}${checksumOf(random)}`;
}

/** Random characters a key's `start` shows after `_` (SPEC §15): enough to recognise a key, far too few to guess it. */
export const START_CHARS = 8;

/** A key's `start`: its prefix, `_` and the first 8 random characters (`rig_Ab3dE9xQ`), kept at issue. */
export function keyStart(key: string, prefix: string): string {
  return key.slice(0, prefix.length + 1 + START_CHARS);
}

export type KeyFormatProblem = 'prefix' | 'characters' | 'length' | 'checksum';

/**
 * Checks the shape and checksum of a presented key, with no I/O. Returns null when the key is
 * well-formed, else what is wrong (a value, not an exception: a bad key is an expected input).
 */
export function keyFormatProblem(token: string, prefix: string): KeyFormatProblem | null {
  if (!token.startsWith(prefix) || token.charCodeAt(prefix.length) !== 95 /* _ */) return 'prefix';
  const body = token.length - prefix.length - 1;
  if (body < RANDOM_CHARS + CHECKSUM_CHARS || body > MAX_RANDOM_CHARS + CHECKSUM_CHARS) return 'length';
  for (let i = prefix.length + 1; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c >= 128 || BASE62_CHAR[c] !== 1) return 'characters';
  }
  const random = token.slice(prefix.length + 1, token.length - CHECKSUM_CHARS);
  // The checksum is public (anyone can compute it), so a plain comparison leaks nothing.
  return checksumOf(random) === token.slice(token.length - CHECKSUM_CHARS) ? null : 'checksum';
}

/** What Redis stores in place of the key: SHA-256 of the whole key (prefix included), hex. */
export function hashApiKey(token: string): string {
  // One-shot hash: about a third of createHash().update().digest() per verified request.
  return hash('sha256', token, 'hex');
}
