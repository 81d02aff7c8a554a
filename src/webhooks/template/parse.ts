/**
 * Parsing templates: mustache.js's own parser (so templates mean what Mustache users expect,
 * delimiter changes included), a bounded cache of parsed tokens, and the write-time check
 * (`templateSyntaxProblem`: syntax errors with line and column, partials, nesting).
 */
import Mustache from 'mustache';

export type TemplateErrorCode = 'TEMPLATE_SYNTAX' | 'TEMPLATE_PARTIALS_UNSUPPORTED' | 'TEMPLATE_OUTPUT_TOO_LARGE' | 'TEMPLATE_TOO_COMPLEX' | 'TEMPLATE_OUTPUT_INVALID_JSON';

/** A mustache.js token: [type, value, start, end, children?, ...]. */
export type Token = [string, string, number, number, Token[]?, ...unknown[]];

const TAGS: [string, string] = ['{{', '}}'];
const parser = new Mustache.Writer();
// Our own bounded cache below; the Writer's unbounded one would grow with every edited template.
(parser as unknown as { templateCache: undefined }).templateCache = undefined;

const CACHE_LIMIT = 512;
const tokenCache = new Map<string, Token[]>();

export class TemplateFailure extends Error {
  constructor(
    readonly code: TemplateErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

function containsPartial(tokens: Token[]): boolean {
  // Iterative: a template may nest sections deeper than the call stack allows.
  const pending: Token[][] = [tokens];
  for (let list = pending.pop(); list !== undefined; list = pending.pop()) {
    for (const t of list) {
      if (t[0] === '>') return true;
      const children = t[4];
      if ((t[0] === '#' || t[0] === '^') && Array.isArray(children)) pending.push(children);
    }
  }
  return false;
}

export function parseTokens(template: string): Token[] {
  const cached = tokenCache.get(template);
  if (cached) {
    // LRU: move to the most recent end.
    tokenCache.delete(template);
    tokenCache.set(template, cached);
    return cached;
  }
  let tokens: Token[];
  try {
    tokens = parser.parse(template, TAGS) as Token[];
  } catch (err) {
    if (err instanceof RangeError) throw new TemplateFailure('TEMPLATE_TOO_COMPLEX', 'template nests sections too deeply; simplify it');
    const message = err instanceof Error ? err.message : String(err);
    const at = /at (\d+)$/.exec(message);
    const where = at ? (({ line, column }) => ` (line ${line}, column ${column})`)(lineAndColumn(template, Number(at[1]))) : '';
    throw new TemplateFailure('TEMPLATE_SYNTAX', `template is not valid Mustache: ${message}${where}`);
  }
  if (containsPartial(tokens)) {
    throw new TemplateFailure('TEMPLATE_PARTIALS_UNSUPPORTED', 'template uses a partial ({{> name}}); partials are not supported, write the content inline');
  }
  tokenCache.set(template, tokens);
  if (tokenCache.size > CACHE_LIMIT) tokenCache.delete(tokenCache.keys().next().value as string);
  return tokens;
}

/** Rendering recurses once per section level: bounded at write (the length is bounded by documents/channel-fields.ts). */
export const MAX_TEMPLATE_NESTING = 32;

/** How deeply sections nest, walked without recursion. */
function sectionDepth(tokens: readonly Token[]): number {
  let deepest = 0;
  const stack: Array<[readonly Token[], number]> = [[tokens, 0]];
  while (stack.length > 0) {
    const [list, depth] = stack.pop()!;
    deepest = Math.max(deepest, depth);
    for (const token of list) if (token[4]) stack.push([token[4], depth + 1]);
  }
  return deepest;
}

/**
 * Why `template` cannot be used (Mustache syntax error with line/column, or a partial), or null.
 * Run at write time. For `json`, the output's JSON validity can only be judged when rendering.
 */
export function templateSyntaxProblem(template: string): string | null {
  try {
    const depth = sectionDepth(parseTokens(template));
    if (depth > MAX_TEMPLATE_NESTING) return `the template nests sections ({{#…}} / {{^…}}) ${depth} levels deep; at most ${MAX_TEMPLATE_NESTING} are allowed`;
    return null;
  } catch (err) {
    if (err instanceof TemplateFailure) return err.message;
    throw err;
  }
}
