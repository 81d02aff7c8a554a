/**
 * JSON as RESTHeart reads it. RESTHeart parses `filter`, `sort`, `keys` and request bodies with the
 * MongoDB Java driver's JSON reader, which is more lenient than JSON: single-quoted strings,
 * unquoted keys and shell constructors (`ObjectId('…')`, `ISODate('…')`, `new Date(…)`,
 * `NumberLong(…)`) are accepted. The RESTHeart docs use those forms (`filter={'qty':{'$gt':50}}`),
 * so people paste them into the quickstart. Constructors become canonical extended JSON
 * (`{"$oid"}`, `{"$date": ms}`), the same form documents are stored in.
 *
 * Strict JSON goes through `JSON.parse` first: it is the common case and the fastest path.
 */

export class RelaxedJsonError extends Error {
  override readonly name = 'RelaxedJsonError';
}

export function parseRelaxedJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return new RelaxedParser(text).parseDocument();
  }
}

const IDENT_START = /[A-Za-z_$]/;
const IDENT_PART = /[A-Za-z0-9_$.-]/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/;

class RelaxedParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  parseDocument(): unknown {
    const value = this.parseValue();
    this.skipSpace();
    if (this.pos < this.text.length) this.fail('unexpected text after the JSON value');
    return value;
  }

  private parseValue(): unknown {
    this.skipSpace();
    const ch = this.text[this.pos];
    if (ch === undefined) this.fail('unexpected end of input');
    if (ch === '{') return this.parseObject();
    if (ch === '[') return this.parseArray();
    if (ch === '"' || ch === "'") return this.parseString();
    if (ch === '-' || (ch >= '0' && ch <= '9')) return this.parseNumber();
    if (IDENT_START.test(ch)) return this.parseWord();
    return this.fail(`unexpected character '${ch}'`);
  }

  private parseObject(): Record<string, unknown> {
    this.pos++; // {
    const obj: Record<string, unknown> = {};
    this.skipSpace();
    if (this.peek() === '}') {
      this.pos++;
      return obj;
    }
    for (;;) {
      this.skipSpace();
      const ch = this.peek();
      const key = ch === '"' || ch === "'" ? this.parseString() : this.parseIdentifier();
      this.expect(':');
      // defineProperty, not assignment: a "__proto__" key must stay a plain data property.
      Object.defineProperty(obj, key, { value: this.parseValue(), enumerable: true, writable: true, configurable: true });
      this.skipSpace();
      if (this.peek() === ',') {
        this.pos++;
        continue;
      }
      this.expect('}');
      return obj;
    }
  }

  private parseArray(): unknown[] {
    this.pos++; // [
    const items: unknown[] = [];
    this.skipSpace();
    if (this.peek() === ']') {
      this.pos++;
      return items;
    }
    for (;;) {
      items.push(this.parseValue());
      this.skipSpace();
      if (this.peek() === ',') {
        this.pos++;
        continue;
      }
      this.expect(']');
      return items;
    }
  }

  private parseString(): string {
    const quote = this.text[this.pos++];
    let out = '';
    for (;;) {
      const ch = this.text[this.pos++];
      if (ch === undefined) this.fail('unterminated string');
      if (ch === quote) return out;
      if (ch !== '\\') {
        out += ch;
        continue;
      }
      const esc = this.text[this.pos++];
      switch (esc) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          const hex = this.text.slice(this.pos, this.pos + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 4;
          break;
        }
        case undefined:
          this.fail('unterminated string');
          break;
        default:
          out += esc; // \" \' \\ \/ and the driver's other pass-through escapes
      }
    }
  }

  private parseNumber(): number {
    const match = NUMBER.exec(this.text.slice(this.pos));
    if (!match) this.fail('malformed number');
    this.pos += match[0].length;
    return Number(match[0]);
  }

  private parseIdentifier(): string {
    const start = this.pos;
    if (!IDENT_START.test(this.peek() ?? '')) this.fail('expected a key');
    while (IDENT_PART.test(this.peek() ?? '')) this.pos++;
    return this.text.slice(start, this.pos);
  }

  /** Literals and the shell constructors the driver's reader knows. */
  private parseWord(): unknown {
    const word = this.parseIdentifier();
    switch (word) {
      case 'true':
        return true;
      case 'false':
        return false;
      case 'null':
        return null;
      case 'new': {
        this.skipSpace();
        const ctor = this.parseIdentifier();
        if (ctor !== 'Date') this.fail(`unsupported constructor 'new ${ctor}'`);
        return this.parseDate();
      }
      case 'Date':
      case 'ISODate':
        return this.parseDate();
      case 'ObjectId': {
        const hex = this.parseCallArgument();
        if (typeof hex !== 'string' || !/^[0-9a-fA-F]{24}$/.test(hex)) this.fail('ObjectId needs 24 hex characters');
        return { $oid: hex.toLowerCase() };
      }
      case 'NumberLong':
      case 'NumberInt':
      case 'NumberDecimal': {
        const n = Number(this.parseCallArgument());
        if (!Number.isFinite(n)) this.fail(`${word} needs a number`);
        return n;
      }
      default:
        return this.fail(`unknown word '${word}'`);
    }
  }

  private parseDate(): { $date: number } {
    const arg = this.parseCallArgument();
    const ms = typeof arg === 'number' ? arg : typeof arg === 'string' ? Date.parse(arg) : NaN;
    if (!Number.isFinite(ms)) this.fail('a date needs epoch milliseconds or an ISO-8601 string');
    return { $date: ms };
  }

  private parseCallArgument(): unknown {
    this.expect('(');
    const value = this.parseValue();
    this.expect(')');
    return value;
  }

  private skipSpace(): void {
    while (/\s/.test(this.text[this.pos] ?? '')) this.pos++;
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private expect(ch: string): void {
    this.skipSpace();
    if (this.text[this.pos] !== ch) this.fail(`expected '${ch}'`);
    this.pos++;
  }

  private fail(problem: string): never {
    throw new RelaxedJsonError(`${problem} at position ${this.pos}`);
  }
}
