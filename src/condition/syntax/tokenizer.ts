import { ConditionSyntaxError } from '../errors.js';

/**
 * One word of a condition. Quoting only groups characters: a quoted `'and'` or `')'` is the same
 * token as the bare word, exactly as in Undertow, so the parser compares `text` only.
 */
export interface Token {
  readonly text: string;
  /** Index in the source of the token's first character (the opening quote when quoted). */
  readonly position: number;
  /** Index in the source of `text`'s first character (after the opening quote). */
  readonly textPosition: number;
  readonly quoted: boolean;
}

export const NEWLINE = '\n';
export const ARROW = '->';

const SINGLE_CHARACTER_TOKENS = new Set([';', '(', ')', ',', '=', '[', ']', '{', '}']);
const OPENING_BRACKETS = new Set(['(', '[', '{']);
const CLOSING_BRACKETS = new Set([')', ']', '}']);

/**
 * Splits a condition into tokens following Undertow's `PredicatedHandlersParser.tokenize`
 * (as observed on undertow-core, see notes/webhooks.md §A.1):
 * - spaces and tabs separate words; `; ( ) , = [ ] { }` are tokens of their own; `->` too;
 * - a newline is a token, except inside `(`, `[` or `{`, where it is dropped;
 * - `'...'` / `"..."` group characters; a quote is legal only at the start of a word; a
 *   backslash right before the closing quote escapes it; a newline ends an open string;
 * - `%{` and `${` open an attribute word that keeps every character up to `}`;
 * - `#` as the first thing on a line starts a comment that runs to the end of that line.
 */
// eslint-disable-next-line max-lines-per-function -- a tokenizer's one loop over characters; its state is shared by every branch
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let word = '';
  let wordStart = 0;
  let quote = '';
  let quoteStart = 0;
  let inAttribute = false;
  let bracketDepth = 0;

  const pushWord = (): void => {
    if (word.length > 0) tokens.push({ text: word, position: wordStart, textPosition: wordStart, quoted: false });
    word = '';
  };
  const atLineStart = (): boolean => word.length === 0 && (tokens.length === 0 || tokens[tokens.length - 1]!.text === NEWLINE);

  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (quote !== '') {
      if (c === quote) {
        if (word.endsWith('\\')) {
          word = word.slice(0, -1) + c;
        } else {
          tokens.push({ text: word, position: quoteStart, textPosition: quoteStart + 1, quoted: true });
          word = '';
          quote = '';
        }
      } else if (c === '\n' || c === '\r') {
        // Undertow ends the string here and emits the newline whatever the bracket depth; the
        // parser then rejects what follows.
        tokens.push({ text: word, position: quoteStart, textPosition: quoteStart + 1, quoted: true });
        tokens.push({ text: NEWLINE, position: i, textPosition: i, quoted: false });
        word = '';
        quote = '';
      } else {
        word += c;
      }
      continue;
    }
    switch (c) {
      case ' ':
      case '\t':
        pushWord();
        break;
      case '\r':
      case '\n':
        pushWord();
        if (bracketDepth === 0) tokens.push({ text: NEWLINE, position: i, textPosition: i, quoted: false });
        break;
      case '"':
      case "'":
        if (word.length !== 0) {
          throw new ConditionSyntaxError(source, i, `unexpected quote inside the word '${word}': quotes may only open a value`);
        }
        quote = c;
        quoteStart = i;
        break;
      case '%':
      case '$':
        if (word.length === 0) wordStart = i;
        word += c;
        if (source[i + 1] === '{') inAttribute = true;
        break;
      case '-':
        if (!inAttribute && source[i + 1] === '>') {
          pushWord();
          tokens.push({ text: ARROW, position: i, textPosition: i, quoted: false });
          i++;
        } else {
          if (word.length === 0) wordStart = i;
          word += c;
        }
        break;
      case '#':
        if (atLineStart()) {
          while (i + 1 < source.length && source[i + 1] !== '\n' && source[i + 1] !== '\r') i++;
        } else {
          if (word.length === 0) wordStart = i;
          word += c;
        }
        break;
      default:
        if (SINGLE_CHARACTER_TOKENS.has(c)) {
          if (inAttribute) {
            word += c;
            if (c === '}') inAttribute = false;
            break;
          }
          pushWord();
          tokens.push({ text: c, position: i, textPosition: i, quoted: false });
          if (OPENING_BRACKETS.has(c)) bracketDepth++;
          else if (CLOSING_BRACKETS.has(c) && bracketDepth > 0) bracketDepth--;
        } else {
          if (word.length === 0) wordStart = i;
          word += c;
        }
    }
  }
  if (quote !== '') {
    // An unterminated string still becomes a token; the parser then reports what is missing.
    tokens.push({ text: word, position: quoteStart, textPosition: quoteStart + 1, quoted: true });
  } else {
    pushWord();
  }
  return tokens;
}
