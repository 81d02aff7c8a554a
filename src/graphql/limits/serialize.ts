/**
 * JSON serialization of a GraphQL response in slices (issue 25): the body is written piece by
 * piece, the bytes are counted as they are produced, and the event loop gets a turn
 * (`setImmediate`) whenever a slice has run for SLICE_MS. Past `maxBytes` it stops and answers
 * how far it got, so an answer too large for the cap never exists whole in memory, and a large
 * one never holds the loop for the whole of its serialization (JSON.stringify of 100 MB held it
 * for seconds and then ran out of heap).
 *
 * The output is what JSON.stringify gives for the values a GraphQL result holds: plain objects,
 * arrays, strings, finite numbers, booleans and null (`undefined` members are left out, `toJSON`
 * is honoured, non-finite numbers become null).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export type SerializeResult = { readonly ok: true; readonly body: string } | { readonly ok: false; readonly bytes: number };

/** Longest a slice runs before the loop gets a turn. */
const SLICE_MS = 8;
/** Characters gathered before they are counted and the clock is read. */
const CHUNK_CHARS = 16 * 1024;
/** Longest string a small object may hold and still be written by one JSON.stringify. */
const SMALL_STRING_CHARS = 1024;
/** Most members (nested ones included) a small object may have. */
const SMALL_MEMBERS = 64;

/**
 * Whether `o` is small: at most SMALL_MEMBERS members in all, nested objects and arrays included,
 * strings of at most SMALL_STRING_CHARS, nothing with `toJSON`. Most objects of a GraphQL result
 * are (a row with its joined document, `{"$oid": ...}`); JSON.stringify writes one about three
 * times faster than the walk below, and its size is bounded (64 KiB).
 */
function isSmall(o: object): boolean {
  let budget = SMALL_MEMBERS;
  const check = (v: object): boolean => {
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
    for (const k in v) {
      if (--budget < 0) return false;
      const x = (v as Record<string, unknown>)[k];
      if (typeof x === 'object') {
        if (x !== null && !check(x)) return false;
      } else if (typeof x === 'string' && x.length > SMALL_STRING_CHARS) return false;
    }
    return true;
  };
  return check(o);
}

interface Frame {
  readonly value: Record<string, unknown> | unknown[];
  readonly keys: string[] | undefined;
  index: number;
  /** Whether a member was written (a comma goes before the next). */
  wrote: boolean;
}

/**
 * Largest answer written by one JSON.stringify, as an upper bound on its UTF-8 bytes: at most
 * this many bytes, a few milliseconds of the loop (about what one slice holds it).
 */
const ONE_SHOT_BYTES = 4 * 1024 * 1024;
/** Deepest nesting the bound walks (a GraphQL result is as deep as its query, which maxDepth bounds). */
const ONE_SHOT_DEPTH = 64;

/**
 * An upper bound on the UTF-8 bytes JSON.stringify writes for `v`, or Infinity past `limit`, or
 * when one JSON.stringify would not write what the sliced walk writes (`toJSON`, a bigint) or the
 * value nests deeper than ONE_SHOT_DEPTH. A string of n UTF-16 units writes at most 6n + 2 bytes
 * (`\u00XX` for a control character; 3 bytes for any other unit), a number at most 24 (issue 39:
 * one walk that allocates nothing and one JSON.stringify cost about half of the sliced walk, which
 * stringified each small object apart and walked it first).
 */
export function jsonBytesBound(v: unknown, limit: number): number {
  let total = 0;
  const walk = (x: object, depth: number): boolean => {
    if (depth > ONE_SHOT_DEPTH || typeof (x as { toJSON?: unknown }).toJSON === 'function') return false;
    if (Array.isArray(x)) {
      total += 2 + x.length;
      for (let i = 0; i < x.length; i++) if (!member(x[i], depth, true)) return false;
    } else {
      total += 2;
      for (const k in x) {
        if (!Object.prototype.hasOwnProperty.call(x, k)) continue;
        // Counted even when left out (an undefined member): a bound, not the length.
        total += 6 * k.length + 4;
        if (!member((x as Record<string, unknown>)[k], depth, false)) return false;
      }
    }
    return total <= limit;
  };
  const member = (x: unknown, depth: number, inArray: boolean): boolean => {
    switch (typeof x) {
      case 'string':
        total += 6 * x.length + 2;
        return total <= limit;
      case 'number':
        total += 24;
        return true;
      case 'boolean':
        total += 5;
        return true;
      case 'object':
        if (x === null) {
          total += 4;
          return true;
        }
        return walk(x, depth + 1);
      case 'bigint':
        return false; // JSON.stringify throws on a bigint; the sliced walk writes its digits
      default:
        if (inArray) total += 4;
        return true;
    }
  };
  return member(v, 0, true) && total <= limit ? total : Infinity;
}

export async function serializeJson(value: unknown, maxBytes: number): Promise<SerializeResult> {
  // Small enough to be written at once, and within maxBytes whatever its strings hold.
  if (jsonBytesBound(value, Math.min(maxBytes, ONE_SHOT_BYTES)) !== Infinity) return { ok: true, body: JSON.stringify(value) ?? 'null' };
  const chunks: string[] = [];
  let bytes = 0;
  let sliceStart = performance.now();
  const writer = new JsonWriter();
  if (!writer.open(value, true)) return { ok: true, body: 'null' };
  while (writer.stack.length > 0) {
    writer.step();
    if (writer.chunk.length >= CHUNK_CHARS) {
      bytes += Buffer.byteLength(writer.chunk);
      if (bytes > maxBytes) return { ok: false, bytes };
      chunks.push(writer.chunk);
      writer.chunk = '';
      if (performance.now() - sliceStart >= SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  }
  bytes += Buffer.byteLength(writer.chunk);
  if (bytes > maxBytes) return { ok: false, bytes };
  chunks.push(writer.chunk);
  return { ok: true, body: chunks.length === 1 ? (chunks[0] as string) : chunks.join('') };
}

/** JSON written a frame at a time into `chunk`, which the caller takes away in slices. */
class JsonWriter {
  chunk = '';
  readonly stack: Frame[] = [];
  /** Keys repeat in every row of a list: quote each once. */
  private readonly quoted = new Map<string, string>();

  /** Writes a value: a leaf at once, a container by opening it and pushing its frame. */
  open(v: unknown, inArray: boolean): boolean {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON: () => unknown }).toJSON();
    switch (typeof v) {
      case 'string':
        this.chunk += JSON.stringify(v);
        return true;
      case 'number':
        this.chunk += Number.isFinite(v) ? String(v) : 'null';
        return true;
      case 'boolean':
        this.chunk += v ? 'true' : 'false';
        return true;
      case 'bigint':
        this.chunk += String(v);
        return true;
      case 'object':
        if (v === null) {
          this.chunk += 'null';
        } else if (isSmall(v)) {
          this.chunk += JSON.stringify(v);
        } else if (Array.isArray(v)) {
          this.chunk += '[';
          this.stack.push({ value: v, keys: undefined, index: 0, wrote: false });
        } else {
          this.chunk += '{';
          this.stack.push({ value: v as Record<string, unknown>, keys: Object.keys(v), index: 0, wrote: false });
        }
        return true;
      default:
        // undefined, functions, symbols: left out of objects, null in arrays (as JSON.stringify does).
        if (inArray) this.chunk += 'null';
        return inArray;
    }
  }

  /** The next item or member of the innermost open container, or its close. */
  step(): void {
    const frame = this.stack[this.stack.length - 1] as Frame;
    if (frame.keys === undefined) {
      const list = frame.value as unknown[];
      if (frame.index >= list.length) {
        this.chunk += ']';
        this.stack.pop();
      } else {
        if (frame.index > 0) this.chunk += ',';
        this.open(list[frame.index++], true);
      }
      return;
    }
    const keys = frame.keys;
    if (frame.index >= keys.length) {
      this.chunk += '}';
      this.stack.pop();
      return;
    }
    const key = keys[frame.index++] as string;
    const member = (frame.value as Record<string, unknown>)[key];
    const mark = this.chunk.length;
    let q = this.quoted.get(key);
    if (q === undefined) this.quoted.set(key, (q = `${JSON.stringify(key)}:`));
    this.chunk += frame.wrote ? `,${q}` : q;
    if (this.open(member, false)) frame.wrote = true;
    else this.chunk = this.chunk.slice(0, mark);
  }
}
