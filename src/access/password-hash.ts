import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))));

// N=2^15, r=8, p=1: OWASP's scrypt floor; ~50 ms here, which also slows online guessing.
const DEFAULT = { N: 32768, r: 8, p: 1 };
const KEY_LENGTH = 32;

/** `scrypt$N$r$p$<salt base64>$<hash base64>` — the format `users.static[].password` takes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { ...DEFAULT, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${DEFAULT.N}$${DEFAULT.r}$${DEFAULT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

export function parsePasswordHash(text: string): ParsedHash | null {
  const parts = text.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0) || (N & (N - 1)) !== 0 || N > 2 ** 20) return null;
  const salt = Buffer.from(parts[4]!, 'base64');
  const hash = Buffer.from(parts[5]!, 'base64');
  if (salt.length < 8 || hash.length < 16) return null;
  return { N, r, p, salt, hash };
}

/** Constant-time comparison of the derived key; same work whether or not the password is right. */
export async function verifyPassword(password: string, stored: ParsedHash): Promise<boolean> {
  const derived = await scrypt(password, stored.salt, stored.hash.length, {
    N: stored.N,
    r: stored.r,
    p: stored.p,
    maxmem: 256 * stored.N * stored.r + 1024 * 1024,
  });
  return timingSafeEqual(derived, stored.hash);
}
