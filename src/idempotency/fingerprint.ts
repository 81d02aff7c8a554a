import { createHash } from 'node:crypto';

/**
 * What makes two requests under one key "the same request" (SPEC §14): a SHA-256 over their parts
 * (method, path with query, the body's canonical JSON or its bytes). Each part is prefixed with its
 * length so no two different lists of parts hash alike (`["ab","c"]` is not `["a","bc"]`).
 */
export function fingerprintOf(parts: readonly (string | Buffer)[]): string {
  const hash = createHash('sha256');
  const length = Buffer.alloc(8);
  for (const part of parts) {
    const bytes = typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length);
    hash.update(bytes);
  }
  return hash.digest('hex');
}

/**
 * JSON with every object's members sorted by name (code-unit order), recursively, and no
 * whitespace: `{"b":1,"a":2}` and `{ "a": 2, "b": 1 }` are one text. Member order carries no
 * meaning in JSON (RFC 8259 §4), and a client that retries may serialize its object anew; array
 * order is kept (it does carry meaning). Values JSON cannot hold are written as JSON.stringify
 * writes them (undefined members dropped, undefined in arrays as null).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const record = value as Record<string, unknown>;
  if (typeof (record as { toJSON?: unknown }).toJSON === 'function') return canonicalJson((record as { toJSON(): unknown }).toJSON());
  const names = Object.keys(record).sort();
  const members: string[] = [];
  for (const name of names) {
    const member = record[name];
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    members.push(`${JSON.stringify(name)}:${canonicalJson(member)}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * A body's part of a fingerprint: its canonical JSON when it parses as JSON (so key order and
 * whitespace do not matter), else its bytes as sent.
 */
export function bodyPart(body: Buffer, contentType: string | undefined): string | Buffer {
  if (body.length === 0) return body;
  if (contentType === undefined || !/[/+]json\b/i.test(contentType)) return body;
  try {
    return canonicalJson(JSON.parse(body.toString('utf8')));
  } catch {
    return body;
  }
}
