/**
 * Percent-decoding as Undertow applies it (`URLUtils.decode`): `%XX` runs are decoded as UTF-8,
 * `+` becomes a space once decoding is needed, and in paths an encoded `/` or `\` stays encoded
 * (as `%2F` / `%5C`) so it can never create a path segment. Undertow answers 400 to malformed
 * escapes; a proxy may receive them anyway, so they are kept verbatim instead.
 */
export function decodeUrlComponent(value: string, keepEncodedSlashes: boolean, plusIsSpace: boolean): string {
  if (!needsDecoding(value, plusIsSpace)) return value;
  let out = '';
  let i = 0;
  while (i < value.length) {
    const c = value[i]!;
    if (c === '+') {
      out += ' ';
      i++;
    } else if (c === '%') {
      const bytes: number[] = [];
      const runStart = i;
      while (i < value.length && value[i] === '%') {
        const byte = hexByte(value, i + 1);
        if (byte < 0) break;
        bytes.push(byte);
        i += 3;
      }
      if (bytes.length === 0) {
        out += value.slice(runStart, runStart + 1);
        i = runStart + 1;
        continue;
      }
      const decoded = Buffer.from(bytes).toString('utf8');
      out += keepEncodedSlashes ? decoded.replace(/[/\\]/g, (s) => (s === '/' ? '%2F' : '%5C')) : decoded;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function needsDecoding(value: string, plusIsSpace: boolean): boolean {
  // Undertow decodes a path only when it holds a '%' (or a non-ASCII character), so a '+'
  // in a path without escapes stays a '+'; query components decode '+' always.
  if (value.includes('%')) return true;
  return plusIsSpace && value.includes('+');
}

function hexByte(value: string, at: number): number {
  if (at + 1 >= value.length) return -1;
  const high = hexDigit(value.charCodeAt(at));
  const low = hexDigit(value.charCodeAt(at + 1));
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}
