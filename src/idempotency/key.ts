/**
 * The `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header): a Structured
 * Field string (`"..."`, RFC 9651 §3.3.3) of 1–255 characters, or a bare token as many clients
 * send a UUID. Only visible ASCII (0x21–0x7e) counts, a space allowed inside the quotes; anything
 * else is a problem the caller answers 400 for, naming the header.
 */
export const MAX_KEY_CHARS = 255;

export type ParsedKey = { key: string } | { problem: string };

/** undefined: the header is absent. Two headers arrive joined by node as `a, b`: neither form accepts that. */
export function parseIdempotencyKey(value: string | undefined): ParsedKey | undefined {
  if (value === undefined) return undefined;
  const text = trimOws(value);
  if (text.length === 0) return { problem: 'Idempotency-Key is empty; send 1-255 visible ASCII characters, e.g. Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"' };
  const parsed = text.charCodeAt(0) === 34 ? quoted(text) : bare(text);
  if ('problem' in parsed) return parsed;
  if (parsed.key.length === 0) return { problem: 'Idempotency-Key is an empty string; send 1-255 visible ASCII characters' };
  if (parsed.key.length > MAX_KEY_CHARS) return { problem: `Idempotency-Key is ${parsed.key.length} characters long; at most ${MAX_KEY_CHARS} are allowed` };
  return parsed;
}

function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value.charCodeAt(start))) start++;
  while (end > start && isOws(value.charCodeAt(end - 1))) end--;
  return value.slice(start, end);
}

const isOws = (c: number) => c === 32 || c === 9;

/** An SF string: `\"` and `\\` the only escapes, printable ASCII (0x20–0x7e) inside, nothing after the closing quote. */
function quoted(text: string): ParsedKey {
  let key = '';
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 92 /* \ */) {
      const next = text.charCodeAt(++i);
      if (next !== 34 && next !== 92) return { problem: 'Idempotency-Key holds a backslash that escapes neither " nor \\ (a Structured Field string allows only those two escapes)' };
      key += text[i];
    } else if (c === 34 /* " */) {
      if (i !== text.length - 1) return { problem: 'Idempotency-Key has text after its closing quote; send one key (two Idempotency-Key headers are not allowed)' };
      return { key };
    } else if (c < 0x20 || c > 0x7e) return { problem: `Idempotency-Key holds ${describe(c)}; only visible ASCII characters (and spaces inside the quotes) are allowed` };
    else key += text[i];
  }
  return { problem: 'Idempotency-Key opens a quoted string it does not close' };
}

/** A bare token (tchar, `:` and `/`): what clients sending a UUID or ULID unquoted write. */
function bare(text: string): ParsedKey {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return { problem: `Idempotency-Key holds ${describe(c)}; only visible ASCII characters are allowed (quote the key to include spaces)` };
    if (!TOKEN[c]) {
      const what = c === 44 ? 'a comma (two Idempotency-Key headers, or a list, are not allowed)' : `the character ${JSON.stringify(text[i])}`;
      return { problem: `Idempotency-Key holds ${what}; send one key, quoted ("...") if it holds characters a token may not` };
    }
  }
  return { key: text };
}

function describe(c: number): string {
  if (c === 32 || c === 9) return 'whitespace';
  if (c < 0x20 || c === 0x7f) return `a control character (0x${c.toString(16).padStart(2, '0')})`;
  return 'a non-ASCII character';
}

/** RFC 9110 tchar plus `:` and `/` (RFC 9651 sf-token). */
const TOKEN: boolean[] = (() => {
  const table: boolean[] = [];
  for (let c = 0; c < 128; c++) table[c] = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || "!#$%&'*+-.^_`|~:/".includes(String.fromCharCode(c));
  return table;
})();
