import { MAX_JSON_DEPTH } from './limits.js';

/**
 * Whether `text` is exactly what `JSON.stringify(JSON.parse(text))` gives back, nested no deeper
 * than `maxDepth`: then the text can stand in for the parsed value wherever that value would be
 * serialized again (a webhook payload embeds a captured JSON body), and nothing needs parsing.
 *
 * One linear scan, no recursion and no allocation on the common path. It may say no to some
 * canonical texts (an object with more than MAX_KEYS_PER_OBJECT members, a number it has to
 * check by converting, a `\u` escape other than a control character's), never yes to a text
 * that is not canonical: a no only sends the caller down the parse-and-serialize path.
 *
 * Canonical here means JSON.stringify's output: no whitespace between tokens; strings escape `"`,
 * `\`, control characters (\b \f \n \r \t, the others as lower-case \u00xx) and nothing else, and
 * hold no lone surrogate; numbers are JavaScript's own shortest form (`String(Number(token))`,
 * so no `-0`, `1.0`, `1E5` or `01`); no object repeats a member name (JSON.parse keeps the last).
 */
export function isCanonicalJson(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  if (maxDepth + 2 > kinds.length) return false;
  const n = text.length;
  let i = 0;
  let depth = 0;
  let keyCount = 0; // member names recorded for every open object, innermost last
  for (;;) {
    // A value starts at i.
    let c = text.charCodeAt(i);
    let closed = true;
    if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > maxDepth) return false;
      const isObject = c === 123;
      kinds[depth] = isObject ? OBJECT : ARRAY;
      keyFloor[depth] = keyCount;
      i++;
      if (text.charCodeAt(i) === (isObject ? 125 : 93)) {
        i++;
        depth--;
      } else if (isObject) {
        i = memberName(text, i, depth, keyCount);
        if (i < 0) return false;
        keyCount++;
        closed = false;
      } else closed = false;
    } else if (c === 34 /* " */) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    } else if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      i = numberEnd(text, i);
      if (i < 0) return false;
    } else if (c === 116 /* t */ && text.startsWith('true', i)) i += 4;
    else if (c === 102 /* f */ && text.startsWith('false', i)) i += 5;
    else if (c === 110 /* n */ && text.startsWith('null', i)) i += 4;
    else return false;
    if (!closed) continue;
    // A value ended at i: close containers until another value is due.
    for (;;) {
      if (depth === 0) return i === n;
      c = text.charCodeAt(i);
      const isObject = kinds[depth] === OBJECT;
      if (c === 44 /* , */) {
        i++;
        if (isObject) {
          if (keyCount - keyFloor[depth]! >= MAX_KEYS_PER_OBJECT) return false;
          i = memberName(text, i, depth, keyCount);
          if (i < 0) return false;
          keyCount++;
        }
        break;
      }
      if (c !== (isObject ? 125 : 93)) return false;
      i++;
      keyCount = keyFloor[depth]!;
      depth--;
    }
  }
}

/**
 * Checking a new name against the names before it in its object is quadratic in the object's
 * size: past this many members the text is left to JSON.parse, which is linear.
 */
const MAX_KEYS_PER_OBJECT = 64;
const OBJECT = 1;
const ARRAY = 2;
/** Per depth: object or array, and where its member names start in the arrays below. */
const kinds = new Uint8Array(MAX_JSON_DEPTH + 2);
const keyFloor = new Int32Array(MAX_JSON_DEPTH + 2);
/** Member names of the open objects: hash, start and end of the quoted text. */
const keyHash = new Int32Array(MAX_KEYS_PER_OBJECT * (MAX_JSON_DEPTH + 1));
const keyStart = new Int32Array(MAX_KEYS_PER_OBJECT * (MAX_JSON_DEPTH + 1));
const keyEnd = new Int32Array(MAX_KEYS_PER_OBJECT * (MAX_JSON_DEPTH + 1));

/**
 * A member name at i, its colon, and that it repeats no earlier name of its object; returns
 * where the member's value starts, or -1. Names are compared as quoted text: in canonical form
 * every string has exactly one spelling, so equal texts are equal names and vice versa.
 */
function memberName(text: string, i: number, depth: number, slot: number): number {
  if (text.charCodeAt(i) !== 34) return -1;
  const end = stringEnd(text, i);
  if (end < 0 || text.charCodeAt(end) !== 58 /* : */) return -1;
  let hash = 0;
  for (let j = i + 1; j < end - 1; j++) hash = (Math.imul(hash, 31) + text.charCodeAt(j)) | 0;
  for (let k = keyFloor[depth]!; k < slot; k++) {
    if (keyHash[k] === hash && sameText(text, keyStart[k]!, keyEnd[k]!, i, end)) return -1;
  }
  keyHash[slot] = hash;
  keyStart[slot] = i;
  keyEnd[slot] = end;
  return end + 1;
}

function sameText(text: string, aStart: number, aEnd: number, bStart: number, bEnd: number): boolean {
  if (aEnd - aStart !== bEnd - bStart) return false;
  for (let k = 0; k < aEnd - aStart; k++) if (text.charCodeAt(aStart + k) !== text.charCodeAt(bStart + k)) return false;
  return true;
}

/** The index after the closing quote of the string opening at i, or -1 when it is not in JSON.stringify's spelling. */
function stringEnd(text: string, i: number): number {
  const n = text.length;
  for (let j = i + 1; j < n; j++) {
    const c = text.charCodeAt(j);
    if (c === 34) return j + 1;
    if (c < 0x20) return -1;
    if (c === 92 /* \ */) {
      const e = text.charCodeAt(++j);
      if (e === 34 || e === 92 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116) continue;
      if (e !== 117 /* u */ || j + 4 >= n) return -1;
      // \u00xx in lower case, for the control characters without a short escape.
      if (text.charCodeAt(j + 1) !== 48 || text.charCodeAt(j + 2) !== 48) return -1;
      const hi = text.charCodeAt(j + 3);
      const lo = text.charCodeAt(j + 4);
      if (hi !== 48 && hi !== 49) return -1;
      const loValue = lo >= 48 && lo <= 57 ? lo - 48 : lo >= 97 && lo <= 102 ? lo - 87 : -1;
      if (loValue < 0) return -1;
      const code = (hi - 48) * 16 + loValue;
      if (code === 8 || code === 9 || code === 10 || code === 12 || code === 13) return -1;
      j += 4;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // Only a high surrogate followed by a low one: JSON.stringify escapes a lone one.
      if (c > 0xdbff) return -1;
      const next = text.charCodeAt(j + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return -1;
      j++;
    }
  }
  return -1;
}

/** The index after the number starting at i, or -1 when it is not JavaScript's own spelling of its value. */
function numberEnd(text: string, i: number): number {
  const n = text.length;
  let j = i;
  if (text.charCodeAt(j) === 45) j++;
  const firstDigit = j;
  while (j < n && isDigit(text.charCodeAt(j))) j++;
  const intDigits = j - firstDigit;
  if (intDigits === 0 || (intDigits > 1 && text.charCodeAt(firstDigit) === 48)) return -1;
  const c = text.charCodeAt(j);
  if (c !== 46 /* . */ && c !== 101 /* e */ && c !== 69 /* E */) {
    // A plain integer of up to 15 digits is exact and printed as written; `-0` prints as `0`.
    if (intDigits <= 15 && !(intDigits === 1 && text.charCodeAt(firstDigit) === 48 && firstDigit > i)) return j;
    return String(Number(text.slice(i, j))) === text.slice(i, j) ? j : -1;
  }
  if (c === 46) {
    j++;
    const start = j;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    if (j === start) return -1;
    const after = text.charCodeAt(j);
    if (after !== 101 && after !== 69 && plainDecimalIsCanonical(text, firstDigit, intDigits, start, j)) return j;
  }
  const e = text.charCodeAt(j);
  if (e === 101 || e === 69) {
    j++;
    const sign = text.charCodeAt(j);
    if (sign === 43 || sign === 45) j++;
    const start = j;
    while (j < n && isDigit(text.charCodeAt(j))) j++;
    if (j === start) return -1;
  }
  const token = text.slice(i, j);
  return String(Number(token)) === token ? j : -1;
}

/**
 * A decimal without exponent (`int.frac`) that is printed as written, decided without converting:
 * at most 15 significant digits (so no other decimal of as few digits names the same double, and
 * the written one is the shortest), no trailing zero in the fraction, and a magnitude JavaScript
 * prints without exponent (at most five zeros after the point before the first digit, for 0.x).
 */
function plainDecimalIsCanonical(text: string, firstDigit: number, intDigits: number, fracStart: number, end: number): boolean {
  if (text.charCodeAt(end - 1) === 48) return false;
  let significant: number;
  if (intDigits === 1 && text.charCodeAt(firstDigit) === 48) {
    let zeros = 0;
    while (fracStart + zeros < end && text.charCodeAt(fracStart + zeros) === 48) zeros++;
    if (zeros > 5) return false;
    significant = end - fracStart - zeros;
  } else significant = intDigits + (end - fracStart);
  return significant <= 15;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
