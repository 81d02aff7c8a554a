/**
 * Whether a rendered JSON body is JSON, and if not, why, where and near what: what an operator
 * needs to fix a template (`TEMPLATE_OUTPUT_INVALID_JSON`).
 */
import { lineAndColumn } from './parse.js';

function describeChar(c: string): string {
  if (c === '\n') return 'a line break';
  if (c === '\r') return 'a carriage return';
  if (c === '\t') return 'a tab';
  return `"${c}"`;
}

/**
 * Null when `text` is JSON, otherwise "<reason> at line L, column C near …" (what an operator
 * needs to fix a template). Written iteratively: any nesting depth is fine.
 */
export function jsonSyntaxProblem(text: string): string | null {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    const located = locateJsonError(text);
    if (!located) return err instanceof Error ? err.message : String(err);
    const { line, column } = lineAndColumn(text, located.position);
    const from = Math.max(0, located.position - 30);
    const to = Math.min(text.length, located.position + 30);
    const snippet = (from > 0 ? '…' : '') + text.slice(from, located.position) + '⟪HERE⟫' + text.slice(located.position, to) + (to < text.length ? '…' : '');
    // Control characters made visible, so the message stays on one line.
    let visible = '';
    for (const ch of snippet) {
      const code = ch.charCodeAt(0);
      if (code >= 0x20) visible += ch;
      else if (ch === '\n') visible += '\\n';
      else if (ch === '\r') visible += '\\r';
      else if (ch === '\t') visible += '\\t';
      else visible += `\\u${code.toString(16).padStart(4, '0')}`;
    }
    return `${located.reason} at line ${line}, column ${column}, near: ${visible}`;
  }
}

type Expect = 'value' | 'valueOrClose' | 'key' | 'keyOrClose' | 'colon' | 'commaOrClose' | 'end';
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

// eslint-disable-next-line max-lines-per-function -- a scanner's one loop over characters; its state is shared by every branch
function locateJsonError(text: string): { position: number; reason: string } | null {
  const n = text.length;
  const stack: Array<'{' | '['> = [];
  let i = 0;
  let expect: Expect = 'value';
  const afterValue = (): Expect => (stack.length > 0 ? 'commaOrClose' : 'end');
  const fail = (reason: string, position = i) => ({ position, reason });
  const scanString = (): { position: number; reason: string } | null => {
    const start = i;
    i++;
    while (i < n) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        return null;
      }
      if (c === '\\') {
        const e = text[i + 1];
        if (e === undefined) break;
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return fail('invalid \\u escape in a string');
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) return fail(`invalid escape "\\${e}" in a string`);
        i += 2;
        continue;
      }
      if (c.charCodeAt(0) < 0x20) {
        return fail(`${describeChar(c)} inside a string must be escaped (use {{x}}, which escapes, rather than {{{x}}})`);
      }
      i++;
    }
    return fail('unterminated string', start);
  };

  for (;;) {
    while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
    if (i >= n) {
      if (expect === 'end') return null;
      if (stack.length > 0) return fail(`unexpected end of output: ${stack[stack.length - 1] === '{' ? 'an object' : 'an array'} is not closed`);
      return fail('unexpected end of output: expected a JSON value (is the template empty?)');
    }
    const c = text[i]!;
    switch (expect) {
      case 'end':
        return fail(`unexpected ${describeChar(c)} after the end of the JSON value`);
      case 'colon':
        if (c !== ':') return fail(`expected ":" after an object key, found ${describeChar(c)}`);
        i++;
        expect = 'value';
        continue;
      case 'commaOrClose': {
        const top = stack[stack.length - 1]!;
        if (c === ',') {
          i++;
          expect = top === '{' ? 'key' : 'value';
          continue;
        }
        if ((c === '}' && top === '{') || (c === ']' && top === '[')) {
          stack.pop();
          i++;
          expect = afterValue();
          continue;
        }
        return fail(`expected "," or "${top === '{' ? '}' : ']'}", found ${describeChar(c)}`);
      }
      case 'key':
      case 'keyOrClose': {
        if (c === '}' && expect === 'keyOrClose') {
          stack.pop();
          i++;
          expect = afterValue();
          continue;
        }
        if (c !== '"') {
          return fail(c === '}' ? 'a trailing comma before "}" is not allowed' : `expected an object key in double quotes, found ${describeChar(c)}`);
        }
        const problem = scanString();
        if (problem) return problem;
        expect = 'colon';
        continue;
      }
      case 'value':
      case 'valueOrClose': {
        if (c === ']' && expect === 'valueOrClose') {
          stack.pop();
          i++;
          expect = afterValue();
          continue;
        }
        if (c === '{' || c === '[') {
          stack.push(c);
          i++;
          expect = c === '{' ? 'keyOrClose' : 'valueOrClose';
          continue;
        }
        if (c === '"') {
          const problem = scanString();
          if (problem) return problem;
          expect = afterValue();
          continue;
        }
        NUMBER.lastIndex = i;
        const num = NUMBER.exec(text);
        if (num && num[0] !== '-' && num[0] !== '') {
          i += num[0].length;
          expect = afterValue();
          continue;
        }
        const word = /^(true|false|null)/.exec(text.slice(i, i + 5));
        if (word) {
          i += word[0].length;
          expect = afterValue();
          continue;
        }
        if (c === ']') return fail('a trailing comma before "]" is not allowed');
        if (c === ',' || c === '}' || c === ']') {
          return fail(`expected a value, found ${describeChar(c)} (a variable that rendered empty, e.g. a missing field in a {{{x}}} slot?)`);
        }
        return fail(`expected a value, found ${describeChar(c)} (text outside quotes? put {{x}} inside "...")`);
      }
    }
  }
}
