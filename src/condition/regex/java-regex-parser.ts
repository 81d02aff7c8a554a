import { RegexSyntaxError, type ClassItem, type ParsedRegex, type RegexFlags, type RegexNode } from './java-regex-syntax.js';

/** Java's `\s` is ASCII only, unlike JavaScript's, so it is spelled out. */
const JAVA_SPACE = ' \\t\\n\\x0B\\f\\r';
const JAVA_HORIZONTAL_SPACE = ' \\t\\xA0\\u1680\\u180E\\u2000-\\u200A\\u202F\\u205F\\u3000';
const JAVA_VERTICAL_SPACE = '\\n\\x0B\\f\\r\\x85\\u2028\\u2029';
const MAX_GROUP_DEPTH = 100;

/**
 * Parses a pattern written for `java.util.regex` (Undertow's `regex` predicate compiles with
 * `Pattern.compile`) into a tree the JavaScript emitter can translate exactly. Constructs
 * Java has and JavaScript lacks are translated (`\A`, `\z`, `\Q...\E`, `\h`, Java's ASCII `\s`,
 * a leading `(?i)`); constructs that need backtracking (backreferences, lookaround, atomic
 * groups, possessive quantifiers) are refused with a message, because user regexes run on every
 * request and only a linear-time engine cannot be made to hang by a crafted input.
 */
export function parseJavaRegex(pattern: string, caseInsensitive: boolean): ParsedRegex {
  return new JavaRegexParser(pattern, { caseInsensitive, multiline: false, dotAll: false }).parse();
}

class JavaRegexParser {
  private i = 0;
  private captureCount = 0;
  private depth = 0;

  constructor(
    private readonly pattern: string,
    private readonly flags: RegexFlags,
  ) {}

  parse(): ParsedRegex {
    this.leadingFlags();
    const root = this.alternation();
    if (this.i < this.pattern.length) throw this.error(this.i, "unmatched ')'");
    return { root, flags: this.flags, captureCount: this.captureCount };
  }

  private error(offset: number, message: string): RegexSyntaxError {
    return new RegexSyntaxError(offset, message);
  }

  private peek(offset = 0): string | undefined {
    return this.pattern[this.i + offset];
  }

  /** `(?i)`, `(?m)`, `(?s)` and combinations, only at the very start of the pattern. */
  private leadingFlags(): void {
    const match = /^\(\?([a-zA-Z]+)\)/.exec(this.pattern);
    if (match === null) return;
    for (const flag of match[1]!) {
      if (flag === 'i') this.flags.caseInsensitive = true;
      else if (flag === 'm') this.flags.multiline = true;
      else if (flag === 's') this.flags.dotAll = true;
      else throw this.error(2, `the inline flag '${flag}' is not supported; only (?i), (?m) and (?s) at the start of the pattern are`);
    }
    this.i = match[0].length;
  }

  private alternation(): RegexNode {
    const options = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0]! : { type: 'alternation', options };
  }

  private sequence(): RegexNode {
    const items: RegexNode[] = [];
    while (this.i < this.pattern.length && this.peek() !== '|' && this.peek() !== ')') {
      const start = this.i;
      if (this.peek() === '\\' && this.peek(1) === 'Q') {
        items.push(...this.quotedLiteral());
        continue;
      }
      const atom = this.atom();
      items.push(this.quantifier(atom, start));
    }
    return items.length === 1 ? items[0]! : { type: 'sequence', items };
  }

  /** `\Q...\E`: everything in between is literal (the `\E` may be missing at the end). */
  private quotedLiteral(): RegexNode[] {
    this.i += 2;
    const end = this.pattern.indexOf('\\E', this.i);
    const text = this.pattern.slice(this.i, end === -1 ? undefined : end);
    this.i = end === -1 ? this.pattern.length : end + 2;
    const chars: RegexNode[] = [];
    for (const ch of text) chars.push({ type: 'char', code: ch.codePointAt(0)! });
    // A quantifier after \E applies to the last quoted character, as in Java.
    if (chars.length > 0 && this.i < this.pattern.length && '*+?{'.includes(this.peek()!)) {
      chars.push(this.quantifier(chars.pop()!, this.i));
    }
    return chars;
  }

  private atom(): RegexNode {
    const at = this.i;
    const c = this.pattern[this.i]!;
    switch (c) {
      case '(':
        return this.group();
      case '[':
        return this.characterClass();
      case '.':
        this.i++;
        return { type: 'dot' };
      case '^':
        this.i++;
        return { type: 'assertion', kind: 'start' };
      case '$':
        this.i++;
        return { type: 'assertion', kind: 'end' };
      case '\\':
        return this.escape();
      case '*':
      case '+':
      case '?':
        throw this.error(at, `'${c}' has nothing to repeat`);
      case '{':
        throw this.error(at, "illegal repetition: escape '{' as '\\{' to match it literally");
      default: {
        const code = this.pattern.codePointAt(this.i)!;
        this.i += code > 0xffff ? 2 : 1;
        return { type: 'char', code };
      }
    }
  }

  private group(): RegexNode {
    const open = this.i;
    if (++this.depth > MAX_GROUP_DEPTH) throw this.error(open, `groups nest deeper than ${MAX_GROUP_DEPTH} levels`);
    this.i++;
    let capturing = true;
    let name: string | undefined;
    if (this.peek() === '?') {
      const rest = this.pattern.slice(this.i + 1);
      if (rest.startsWith(':')) {
        capturing = false;
        this.i += 2;
      } else if (/^<[a-zA-Z][a-zA-Z0-9]*>/.test(rest)) {
        const close = rest.indexOf('>');
        name = rest.slice(1, close);
        this.i += 1 + close + 1;
      } else if (/^(=|!|<=|<!)/.test(rest)) {
        throw this.error(open, 'lookahead and lookbehind are not supported: they cannot run in linear time');
      } else if (rest.startsWith('>')) {
        throw this.error(open, 'atomic groups (?>...) are not supported: they cannot run in linear time');
      } else {
        throw this.error(open, 'inline flags and other (?...) groups are not supported here; only (?:...), (?<name>...) and a leading (?i), (?m) or (?s) are');
      }
    }
    if (capturing) this.captureCount++;
    const body = this.alternation();
    if (this.peek() !== ')') throw this.error(open, "unclosed group: '(' has no matching ')'");
    this.i++;
    this.depth--;
    return name === undefined ? { type: 'group', capturing, body } : { type: 'group', capturing, name, body };
  }

  private quantifier(atom: RegexNode, atomStart: number): RegexNode {
    const c = this.peek();
    let min: number;
    let max: number;
    let counted = false;
    if (c === '*') {
      [min, max] = [0, Infinity];
      this.i++;
    } else if (c === '+') {
      [min, max] = [1, Infinity];
      this.i++;
    } else if (c === '?') {
      [min, max] = [0, 1];
      this.i++;
    } else if (c === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.pattern.slice(this.i));
      if (match === null) throw this.error(this.i, "illegal repetition: escape '{' as '\\{' to match it literally");
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? Infinity : Number(match[3]);
      if (max < min) throw this.error(this.i, `illegal repetition range {${min},${max}}`);
      counted = true;
      this.i += match[0].length;
    } else {
      return atom;
    }
    if (atom.type === 'assertion') throw this.error(atomStart, 'an anchor or word boundary cannot be repeated');
    let lazy = false;
    if (this.peek() === '?') {
      lazy = true;
      this.i++;
    } else if (this.peek() === '+') {
      throw this.error(this.i, 'possessive quantifiers (*+, ++, ?+) are not supported: they cannot run in linear time');
    }
    return { type: 'repeat', body: atom, min, max, lazy, counted };
  }

  private escape(): RegexNode {
    const at = this.i;
    const c = this.pattern[this.i + 1];
    if (c === undefined) throw this.error(at, "a pattern cannot end with '\\'");
    this.i += 2;
    switch (c) {
      case 'd':
        return { type: 'set', js: '\\d' };
      case 'D':
        return { type: 'set', js: '\\D' };
      case 'w':
        return { type: 'set', js: '\\w' };
      case 'W':
        return { type: 'set', js: '\\W' };
      case 's':
        return { type: 'set', js: `[${JAVA_SPACE}]` };
      case 'S':
        return { type: 'set', js: `[^${JAVA_SPACE}]` };
      case 'h':
        return { type: 'set', js: `[${JAVA_HORIZONTAL_SPACE}]` };
      case 'H':
        return { type: 'set', js: `[^${JAVA_HORIZONTAL_SPACE}]` };
      case 'v':
        return { type: 'set', js: `[${JAVA_VERTICAL_SPACE}]` };
      case 'V':
        return { type: 'set', js: `[^${JAVA_VERTICAL_SPACE}]` };
      case 'b':
        return { type: 'assertion', kind: 'word-boundary' };
      case 'B':
        return { type: 'assertion', kind: 'not-word-boundary' };
      case 'A':
        if (this.flags.multiline) throw this.error(at, '\\A cannot be combined with (?m); use ^ without (?m)');
        return { type: 'assertion', kind: 'start' };
      case 'z':
        if (this.flags.multiline) throw this.error(at, '\\z cannot be combined with (?m); use $ without (?m)');
        return { type: 'assertion', kind: 'end' };
      case 'Z':
        throw this.error(at, '\\Z is not supported; use $ (or \\z)');
      case 'k':
        throw this.error(at, 'backreferences are not supported: they cannot run in linear time');
      default:
        if (c >= '1' && c <= '9') throw this.error(at, 'backreferences are not supported: they cannot run in linear time');
        this.i = at;
        return { type: 'char', code: this.characterEscape() };
    }
  }

  /**
   * An escape that stands for one character (`\t`, `\x41`, `\u0041`, `\0101`, `\.`...). Shared by
   * the pattern and character classes. Advances past the escape.
   */
  private characterEscape(): number {
    const at = this.i;
    const c = this.pattern[this.i + 1]!;
    this.i += 2;
    const simple: Record<string, number> = { t: 9, n: 10, r: 13, f: 12, a: 7, e: 27 };
    if (c in simple) return simple[c]!;
    if (c === 'c') {
      const control = this.pattern[this.i];
      if (control === undefined) throw this.error(at, '\\c needs a control character');
      this.i++;
      return control.charCodeAt(0) ^ 64;
    }
    if (c === 'x') {
      if (this.peek() === '{') {
        const match = /^\{([0-9a-fA-F]+)\}/.exec(this.pattern.slice(this.i));
        if (match === null || parseInt(match[1]!, 16) > 0x10ffff) throw this.error(at, 'malformed \\x{...} escape');
        this.i += match[0].length;
        return parseInt(match[1]!, 16);
      }
      return this.hexDigits(at, 2);
    }
    if (c === 'u') return this.hexDigits(at, 4);
    if (c === '0') {
      const match = /^([0-3][0-7]{2}|[0-7]{1,2})/.exec(this.pattern.slice(this.i));
      if (match === null) throw this.error(at, 'illegal octal escape: \\0 must be followed by octal digits');
      this.i += match[0].length;
      return parseInt(match[0], 8);
    }
    if (/[a-zA-Z0-9]/.test(c)) {
      throw this.error(at, `the escape \\${c} is not supported in conditions (Unicode classes \\p{...}, \\R, \\X, \\G and the like have no linear-time translation)`);
    }
    // Java lets any other character be escaped to stand for itself.
    const code = this.pattern.codePointAt(at + 1)!;
    if (code > 0xffff) this.i++;
    return code;
  }

  private hexDigits(at: number, count: number): number {
    const digits = this.pattern.slice(this.i, this.i + count);
    if (digits.length !== count || !/^[0-9a-fA-F]+$/.test(digits)) throw this.error(at, `malformed escape: expected ${count} hexadecimal digits`);
    this.i += count;
    return parseInt(digits, 16);
  }

  private characterClass(): RegexNode {
    const open = this.i;
    this.i++;
    let negated = false;
    if (this.peek() === '^') {
      negated = true;
      this.i++;
    }
    if (this.peek() === ']') throw this.error(this.i, "write ']' inside a character class as '\\]'");
    const items: ClassItem[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw this.error(open, "unclosed character class: '[' has no matching ']'");
      if (c === ']') {
        this.i++;
        break;
      }
      if (c === '[') throw this.error(this.i, "nested character classes are not supported; escape '[' as '\\[' to match it");
      if (c === '&' && this.peek(1) === '&') throw this.error(this.i, 'character class intersections (&&) are not supported');
      const set = this.classSet();
      if (set !== undefined) {
        items.push(set);
        continue;
      }
      const from = this.classCharacter();
      if (this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== undefined) {
        const dash = this.i;
        this.i++;
        if (this.peek() === '\\' && this.classSetAhead()) throw this.error(dash, 'a range cannot end with a class like \\d');
        if (this.peek() === '[') throw this.error(this.i, "nested character classes are not supported; escape '[' as '\\['");
        const to = this.classCharacter();
        if (to < from) throw this.error(dash, 'illegal character range: the end is below the start');
        items.push({ type: 'range', from, to });
      } else {
        items.push({ type: 'range', from, to: from });
      }
    }
    return { type: 'class', negated, items };
  }

  private classSetAhead(): boolean {
    return /^\\[dDwWsShv]/.test(this.pattern.slice(this.i));
  }

  /** `\d`, `\w`, `\s`... inside a class. */
  private classSet(): ClassItem | undefined {
    if (this.peek() !== '\\') return undefined;
    const c = this.peek(1);
    const sets: Record<string, string> = { d: '\\d', D: '\\D', w: '\\w', W: '\\W', s: JAVA_SPACE, h: JAVA_HORIZONTAL_SPACE, v: JAVA_VERTICAL_SPACE };
    if (c !== undefined && c in sets) {
      this.i += 2;
      return { type: 'set', js: sets[c]! };
    }
    if (c === 'S' || c === 'H' || c === 'V') {
      throw this.error(this.i, `\\${c} inside a character class is not supported; negate the class instead`);
    }
    if (c === 'Q') throw this.error(this.i, '\\Q...\\E inside a character class is not supported');
    if (c === 'b') throw this.error(this.i, '\\b inside a character class is not supported');
    return undefined;
  }

  private classCharacter(): number {
    if (this.peek() === '\\') return this.characterEscape();
    const code = this.pattern.codePointAt(this.i)!;
    this.i += code > 0xffff ? 2 : 1;
    return code;
  }
}
