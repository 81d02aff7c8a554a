import { RegexSyntaxError, type ClassItem, type ParsedRegex, type RegexNode } from './java-regex-syntax.js';

/**
 * Largest translated pattern accepted. The linear-time engine runs in O(pattern × input), so
 * the pattern size is what bounds the cost of one evaluation (headers and paths are bounded by
 * the HTTP server's own limits).
 */
export const MAX_TRANSLATED_LENGTH = 10_000;

/** V8's linear engine refuses counted repetition past this; bigger counts are unrolled here. */
const ENGINE_REPETITION_LIMIT = 16;

/**
 * Writes a parsed Java regex as JavaScript source for V8's linear-time engine, which accepts no
 * `i` flag: case-insensitive matching is spelled out as `[aA]`, which is also exactly Java's
 * default CASE_INSENSITIVE (ASCII letters only). `.` and `$` keep Java's meaning as far as
 * JavaScript can express it.
 */
export function emitJavaScript(parsed: ParsedRegex, fullMatch: boolean): string {
  const emitter = new Emitter(parsed.flags.caseInsensitive, parsed.flags.dotAll);
  const body = emitter.node(parsed.root);
  const source = fullMatch ? `^(?:${body})$` : body;
  if (source.length > MAX_TRANSLATED_LENGTH) {
    throw new RegexSyntaxError(0, `the pattern is too large once translated (${source.length} characters, at most ${MAX_TRANSLATED_LENGTH}); shorten it or lower its {n,m} counts`);
  }
  return source;
}

class Emitter {
  /** Set while writing the leading copies of an unrolled `(x){n}`: only the last copy captures. */
  private capturesSuppressed = false;

  constructor(
    private readonly caseInsensitive: boolean,
    private readonly dotAll: boolean,
  ) {}

  node(node: RegexNode): string {
    switch (node.type) {
      case 'alternation':
        return node.options.map((option) => this.node(option)).join('|');
      case 'sequence':
        return node.items.map((item) => this.atomInSequence(item)).join('');
      case 'group': {
        const body = this.node(node.body);
        if (!node.capturing || this.capturesSuppressed) return `(?:${body})`;
        return node.name === undefined ? `(${body})` : `(?<${node.name}>${body})`;
      }
      case 'repeat':
        return this.repeat(node);
      case 'char':
        return this.char(node.code);
      case 'class':
        return this.characterClass(node.negated, node.items);
      case 'set':
        return node.js;
      case 'dot':
        return this.dotAll ? '[\\s\\S]' : '[^\\n\\r\\x85\\u2028\\u2029]';
      case 'assertion':
        return { start: '^', end: '$', 'word-boundary': '\\b', 'not-word-boundary': '\\B' }[node.kind];
    }
  }

  /** An alternation inside a sequence only happens through a group, so no extra wrapping is needed. */
  private atomInSequence(node: RegexNode): string {
    return node.type === 'alternation' ? `(?:${this.node(node)})` : this.node(node);
  }

  /** The body as something a quantifier can follow (every atom the parser makes already is one). */
  private quantifiable(node: RegexNode): string {
    const source = this.node(node);
    return node.type === 'sequence' || node.type === 'alternation' || node.type === 'repeat' ? `(?:${source})` : source;
  }

  private repeat(node: Extract<RegexNode, { type: 'repeat' }>): string {
    const body = this.quantifiable(node.body);
    const lazy = node.lazy ? '?' : '';
    if (!node.counted) {
      const symbol = node.min === 0 && node.max === Infinity ? '*' : node.min === 1 && node.max === Infinity ? '+' : '?';
      return `${body}${symbol}${lazy}`;
    }
    const withinEngineLimit = node.min <= ENGINE_REPETITION_LIMIT && (node.max === Infinity ? node.min < ENGINE_REPETITION_LIMIT : node.max <= ENGINE_REPETITION_LIMIT);
    const hasCapture = !this.capturesSuppressed && containsCapture(node.body);
    if (hasCapture && !withinEngineLimit && node.min === node.max) {
      // (x){n} captures the last iteration: n-1 silent copies and one capturing copy.
      this.capturesSuppressed = true;
      const silent = this.quantifiable(node.body);
      this.capturesSuppressed = false;
      this.guardSize(silent, node.min);
      return silent.repeat(node.min - 1) + body;
    }
    if (withinEngineLimit || hasCapture) {
      // Unrolling a capturing group over a range would renumber the groups; V8 rejects it if it is too big.
      const max = node.max === Infinity ? '' : String(node.max);
      const counts = node.max === node.min ? `{${node.min}}` : `{${node.min},${max}}`;
      return `${body}${counts}${lazy}`;
    }
    this.guardSize(body, node.min + (node.max === Infinity ? 1 : node.max - node.min));
    // x{n,m} is n copies of x followed by (m-n) nested optional copies, which keeps the greedy
    // (or lazy) preference order of the counted form.
    let optional = '';
    if (node.max === Infinity) {
      optional = `${body}*${lazy}`;
    } else {
      for (let k = 0; k < node.max - node.min; k++) optional = `(?:${body}${optional})?${lazy}`;
    }
    return body.repeat(node.min) + optional;
  }

  private guardSize(body: string, copies: number): void {
    if (body.length * copies > MAX_TRANSLATED_LENGTH) {
      throw new RegexSyntaxError(0, `the repetition counts make the pattern too large (at most ${MAX_TRANSLATED_LENGTH} characters once expanded)`);
    }
  }

  private char(code: number): string {
    if (this.caseInsensitive) {
      const other = swapAsciiCase(code);
      if (other !== code) return `[${classChar(code)}${classChar(other)}]`;
    }
    if (code > 0xffff) return `(?:${surrogates(code)})`;
    return patternChar(code);
  }

  private characterClass(negated: boolean, items: readonly ClassItem[]): string {
    let inner = '';
    for (const item of items) {
      if (item.type === 'set') {
        inner += item.js;
        continue;
      }
      if (item.to > 0xffff) throw new RegexSyntaxError(0, 'characters outside the Basic Multilingual Plane are not supported inside a character class');
      inner += rangeSource(item.from, item.to);
      if (this.caseInsensitive) {
        for (const [from, to] of caseCounterparts(item.from, item.to)) inner += rangeSource(from, to);
      }
    }
    return `[${negated ? '^' : ''}${inner}]`;
  }
}

function containsCapture(node: RegexNode): boolean {
  switch (node.type) {
    case 'group':
      return node.capturing || containsCapture(node.body);
    case 'alternation':
      return node.options.some(containsCapture);
    case 'sequence':
      return node.items.some(containsCapture);
    case 'repeat':
      return containsCapture(node.body);
    default:
      return false;
  }
}

function swapAsciiCase(code: number): number {
  if (code >= 65 && code <= 90) return code + 32;
  if (code >= 97 && code <= 122) return code - 32;
  return code;
}

/** The other-case ranges of the ASCII letters inside [from, to]. */
function caseCounterparts(from: number, to: number): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const upperFrom = Math.max(from, 65);
  const upperTo = Math.min(to, 90);
  if (upperFrom <= upperTo) ranges.push([upperFrom + 32, upperTo + 32]);
  const lowerFrom = Math.max(from, 97);
  const lowerTo = Math.min(to, 122);
  if (lowerFrom <= lowerTo) ranges.push([lowerFrom - 32, lowerTo - 32]);
  return ranges;
}

function rangeSource(from: number, to: number): string {
  return from === to ? classChar(from) : `${classChar(from)}-${classChar(to)}`;
}

function hex4(code: number): string {
  return `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

function surrogates(code: number): string {
  const offset = code - 0x10000;
  return hex4(0xd800 + (offset >> 10)) + hex4(0xdc00 + (offset & 0x3ff));
}

function isPrintableAscii(code: number): boolean {
  return code >= 0x20 && code < 0x7f;
}

function patternChar(code: number): string {
  if (!isPrintableAscii(code)) return hex4(code);
  const c = String.fromCharCode(code);
  return '\\^$.|?*+()[]{}/'.includes(c) ? `\\${c}` : c;
}

function classChar(code: number): string {
  if (code > 0xffff) return surrogates(code);
  if (!isPrintableAscii(code)) return hex4(code);
  const c = String.fromCharCode(code);
  return '\\]^-['.includes(c) ? `\\${c}` : c;
}
