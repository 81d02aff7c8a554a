/**
 * Extended JSON, the way RESTHeart writes BSON types in JSON (`{"$oid": "…"}`, `{"$date": ms}`).
 *
 * Documents are stored exactly as written and returned untouched. To let mingo compare them like
 * MongoDB compares BSON values, a document and a filter are both *decoded* first: ObjectIds become
 * `ObjectIdValue` (mingo compares objects with a custom `toString` by that string, and 24 hex
 * digits compare like ObjectId bytes), dates become `Date`, `$numberLong`/`$numberInt`/
 * `$numberDouble`/`$numberDecimal` become numbers (the decimal loses precision; fine for a stand-in)
 * and `$regularExpression` becomes a `RegExp`.
 */
import { randomBytes } from 'node:crypto';

export class ObjectIdValue {
  // The field is not called `$oid`: mingo would read an object with a `$` key as an operator.
  constructor(readonly hex: string) {}
  toString(): string {
    return this.hex;
  }
}

export const OBJECT_ID_HEX = /^[0-9a-fA-F]{24}$/;

const NUMBER_WRAPPERS = ['$numberLong', '$numberInt', '$numberDouble', '$numberDecimal'];

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Turns extended JSON into values mingo compares the way MongoDB compares BSON. */
export function decodeExtendedJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decodeExtendedJson);
  if (!isPlainObject(value)) return value;
  const special = decodeWrapper(value);
  if (special !== undefined) return special;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    Object.defineProperty(out, key, { value: decodeExtendedJson(inner), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function decodeWrapper(obj: Record<string, unknown>): unknown {
  const keys = Object.keys(obj);
  if (keys.length !== 1) return undefined;
  const key = keys[0] as string;
  const inner = obj[key];
  if (key === '$oid' && typeof inner === 'string' && OBJECT_ID_HEX.test(inner)) {
    return new ObjectIdValue(inner.toLowerCase());
  }
  if (key === '$date') {
    const ms = dateMillis(inner);
    return ms === undefined ? undefined : new Date(ms);
  }
  if (NUMBER_WRAPPERS.includes(key) && typeof inner === 'string') {
    const n = Number(inner);
    return Number.isNaN(n) && inner !== 'NaN' ? undefined : n;
  }
  if (key === '$regularExpression' && isPlainObject(inner) && typeof inner.pattern === 'string') {
    try {
      return new RegExp(inner.pattern, typeof inner.options === 'string' ? inner.options.replace(/[^imsu]/g, '') : '');
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** `$date` comes as epoch ms, an ISO-8601 string (relaxed mode) or `{"$numberLong": "ms"}` (canonical). */
function dateMillis(inner: unknown): number | undefined {
  if (typeof inner === 'number' && Number.isFinite(inner)) return inner;
  if (typeof inner === 'string') {
    const ms = Date.parse(inner);
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (isPlainObject(inner) && typeof inner.$numberLong === 'string') {
    const ms = Number(inner.$numberLong);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

/**
 * The way back, for values that only exist decoded (mingo's `$currentDate` writes a `Date`).
 * Plain extended-JSON objects are left as they are, so untouched fields keep their exact form.
 */
export function encodeExtendedJson(value: unknown): unknown {
  if (value instanceof Date) return { $date: value.getTime() };
  if (value instanceof ObjectIdValue) return { $oid: value.hex };
  if (value instanceof RegExp) return { $regularExpression: { pattern: value.source, options: value.flags } };
  if (Array.isArray(value)) return value.map(encodeExtendedJson);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    Object.defineProperty(out, key, { value: encodeExtendedJson(inner), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

let objectIdCounter = randomBytes(3).readUIntBE(0, 3);
const processRandom = randomBytes(5);

/** A new ObjectId as MongoDB builds one: 4-byte seconds, 5 random bytes per process, 3-byte counter. */
export function newObjectIdHex(): string {
  const bytes = Buffer.alloc(12);
  bytes.writeUInt32BE(Math.floor(Date.now() / 1000), 0);
  processRandom.copy(bytes, 4);
  objectIdCounter = (objectIdCounter + 1) % 0xffffff;
  bytes.writeUIntBE(objectIdCounter, 9, 3);
  return bytes.toString('hex');
}

/**
 * A stable string for an `_id` value, used to find and compare documents by id: `{"$oid"}` and a
 * string of the same hex are different ids, as in MongoDB.
 */
export function idKey(id: unknown): string {
  const decoded = decodeExtendedJson(id);
  if (decoded instanceof ObjectIdValue) return `oid:${decoded.hex}`;
  if (decoded instanceof Date) return `date:${decoded.getTime()}`;
  if (typeof decoded === 'string') return `str:${decoded}`;
  if (typeof decoded === 'number') return `num:${decoded}`;
  return `json:${JSON.stringify(id)}`;
}

/** How an id appears in a URL (the Location header): ObjectIds as their hex, strings as themselves. */
export function idToPathSegment(id: unknown): string {
  const decoded = decodeExtendedJson(id);
  if (decoded instanceof ObjectIdValue) return decoded.hex;
  if (typeof decoded === 'string' || typeof decoded === 'number') return encodeURIComponent(String(decoded));
  return encodeURIComponent(JSON.stringify(id));
}
