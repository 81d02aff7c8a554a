/**
 * Mustache templates for webhook bodies and e-mails (SPEC §7.2.4-5; notes/webhooks.md §D).
 *
 * Parsing is mustache.js's (so templates mean what Mustache users expect, delimiter changes
 * included); rendering is done here over the parsed tokens, so that:
 * - escaping depends on the output mode and nothing global is touched (no `Mustache.escape`,
 *   no `Mustache.tags`, no shared cache): concurrent renders in different modes cannot leak;
 * - lookups only follow the view's own data: `constructor`, `__proto__`, `prototype` and
 *   inherited members resolve to nothing, and functions are never called (no lambdas);
 * - partials are not supported (refused by `templateSyntaxProblem`, render as an error);
 * - work and output are bounded (`maxOutputBytes`, default 1 MiB; a step budget that stops
 *   sections nested over large arrays).
 *
 * Modes:
 * - `json`: `{{x}}` escapes for the inside of a JSON string (quotes, backslashes, control
 *   characters; never HTML entities); `{{{x}}}` inserts raw. Objects and arrays render as JSON
 *   text (escaped for a string by `{{x}}`, raw by `{{{x}}}`); a null value renders `null` raw
 *   and nothing escaped. The whole output must parse as JSON, otherwise the render fails with
 *   the reason, the line/column and a snippet.
 * - `html`: `{{x}}` HTML-escapes (`& < > " ' / \` =`), `{{{x}}}` inserts raw.
 * - `text` (e-mail subject): nothing is escaped and line breaks are removed (each run of
 *   line-break whitespace becomes one space; the result is trimmed).
 * - `plain`: nothing is escaped, nothing removed (an HTTP body whose Content-Type is not JSON).
 *
 * Variables (`buildTemplateView`): `id` (event id), `timestamp` (ISO 8601), `service.id`,
 * `webhook.id`, `webhook.name`, `request.method`, `request.path`, `request.query[.<name>]`,
 * `request.headers.<Header-Name>` (any case), `request.body[.<dot.path>]`, `request.bodyTruncated`,
 * `response.statusCode`, `response.headers.<Header-Name>`, `response.body[.<dot.path>]`,
 * `response.bodyTruncated`. Array elements are reachable by index (`request.body.items.0.sku`).
 */
import Mustache from 'mustache';
import type { CapturedEvent, CapturedHeaders } from '../event.js';
import type { WebhookRef } from '../webhook.js';

export type TemplateMode = 'json' | 'html' | 'text' | 'plain';

export const DEFAULT_MAX_TEMPLATE_OUTPUT_BYTES = 1024 * 1024;
/** Token visits allowed per render (bounds CPU, e.g. sections nested over large arrays). */
export const DEFAULT_MAX_TEMPLATE_STEPS = 2_000_000;

export type TemplateErrorCode =
  | 'TEMPLATE_SYNTAX'
  | 'TEMPLATE_PARTIALS_UNSUPPORTED'
  | 'TEMPLATE_OUTPUT_TOO_LARGE'
  | 'TEMPLATE_TOO_COMPLEX'
  | 'TEMPLATE_OUTPUT_INVALID_JSON';

export type TemplateRenderResult =
  | { readonly ok: true; readonly output: string }
  | { readonly ok: false; readonly code: TemplateErrorCode; readonly error: string };

export interface RenderOptions {
  readonly maxOutputBytes?: number;
  readonly maxSteps?: number;
}

// ------------------------------------------------------------------------------------------------
// Parsing (cached)

/** A mustache.js token: [type, value, start, end, children?, ...]. */
type Token = [string, string, number, number, Token[]?, ...unknown[]];

const TAGS: [string, string] = ['{{', '}}'];
const parser = new Mustache.Writer();
// Our own bounded cache below; the Writer's unbounded one would grow with every edited template.
(parser as unknown as { templateCache: undefined }).templateCache = undefined;

const CACHE_LIMIT = 512;
const tokenCache = new Map<string, Token[]>();

class TemplateFailure extends Error {
  constructor(
    readonly code: TemplateErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
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

function parseTokens(template: string): Token[] {
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

/** Rendering recurses once per section level: bounded at write (the length is bounded by webhook-document.ts). */
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

// ------------------------------------------------------------------------------------------------
// The view

/** Objects whose keys are lower-case header names and are looked up case-insensitively. */
const headerObjects = new WeakSet<object>();

/** A header map for a template view: lower-case names, repeated values joined with ", ". */
export function templateHeaders(headers: CapturedHeaders | Record<string, string | string[] | undefined>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[key] = key in out ? `${out[key]}, ${text}` : text;
  }
  headerObjects.add(out);
  return out;
}

export interface TemplateView {
  id: string;
  timestamp: string;
  service: { id: string };
  webhook?: { id: string; name: string };
  request: {
    method: string;
    path: string;
    query: Record<string, string | string[]>;
    headers: Record<string, string>;
    body: unknown;
    bodyTruncated: boolean;
  };
  response: { statusCode: number; headers: Record<string, string>; body: unknown; bodyTruncated: boolean };
}

/** The variables a webhook template sees for one event. */
export function buildTemplateView(event: CapturedEvent, webhook?: WebhookRef): TemplateView {
  return {
    id: event.id,
    timestamp: new Date(event.timestamp).toISOString(),
    service: { id: event.serviceId },
    ...(webhook ? { webhook: { id: webhook.id, name: webhook.name } } : {}),
    request: {
      method: event.request.method,
      path: event.request.path,
      query: event.request.query,
      headers: templateHeaders(event.request.headers),
      body: event.request.body === undefined ? null : event.request.body,
      bodyTruncated: event.request.bodyTruncated,
    },
    response: {
      statusCode: event.response.statusCode,
      headers: templateHeaders(event.response.headers),
      body: event.response.body === undefined ? null : event.response.body,
      bodyTruncated: event.response.bodyTruncated,
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Rendering

const BLOCKED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
const NOT_FOUND = Symbol('not found');

/** Own data only: never inherited members, never the blocked names, never functions. */
function member(container: unknown, name: string): unknown {
  if (container === null || container === undefined) return NOT_FOUND;
  if (BLOCKED_NAMES.has(name)) return NOT_FOUND;
  if (typeof container === 'object') {
    const key = headerObjects.has(container) ? name.toLowerCase() : name;
    if (!Object.prototype.hasOwnProperty.call(container, key)) return NOT_FOUND;
    const value = (container as Record<string, unknown>)[key];
    return typeof value === 'function' ? NOT_FOUND : value;
  }
  if (typeof container === 'string') {
    if (name === 'length') return container.length;
    return NOT_FOUND;
  }
  return NOT_FOUND;
}

/** Mustache name resolution: the first segment through the context stack, the rest strictly. */
function lookup(stack: readonly unknown[], name: string): unknown {
  if (name === '.') return stack[stack.length - 1];
  const parts = name.split('.');
  let value: unknown = NOT_FOUND;
  for (let i = stack.length - 1; i >= 0; i--) {
    const found = member(stack[i], parts[0]!);
    if (found !== NOT_FOUND) {
      value = found;
      break;
    }
  }
  for (let i = 1; i < parts.length && value !== NOT_FOUND; i++) value = member(value, parts[i]!);
  return value === NOT_FOUND ? undefined : value;
}

const HTML_ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '/': '&#x2F;',
  '`': '&#x60;',
  '=': '&#x3D;',
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`=/]/g, (c) => HTML_ENTITIES[c]!);
}

function escapeJsonString(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

function valueText(value: unknown, mode: TemplateMode, escaped: boolean): string {
  if (value === undefined) return '';
  if (value === null) return mode === 'json' && !escaped ? 'null' : '';
  const text = toText(value);
  if (!escaped) return text;
  if (mode === 'json') return escapeJsonString(text);
  if (mode === 'html') return escapeHtml(text);
  return text;
}

interface RenderState {
  readonly mode: TemplateMode;
  readonly parts: string[];
  length: number;
  steps: number;
  readonly maxChars: number;
  readonly maxSteps: number;
}

function emit(state: RenderState, text: string): void {
  if (text === '') return;
  state.length += text.length;
  if (state.length > state.maxChars) {
    throw new TemplateFailure('TEMPLATE_OUTPUT_TOO_LARGE', `rendered output exceeds ${state.maxChars} bytes; render less (e.g. a field rather than a whole body)`);
  }
  state.parts.push(text);
}

function renderTokens(tokens: readonly Token[], stack: unknown[], state: RenderState): void {
  state.steps += tokens.length + 1;
  if (state.steps > state.maxSteps) {
    throw new TemplateFailure('TEMPLATE_TOO_COMPLEX', `template needs more than ${state.maxSteps} rendering steps (sections nested over large lists?); simplify it`);
  }
  for (const token of tokens) {
    const [type, value] = token;
    switch (type) {
      case 'text':
        emit(state, value);
        break;
      case 'name':
        emit(state, valueText(lookup(stack, value), state.mode, true));
        break;
      case '&':
        emit(state, valueText(lookup(stack, value), state.mode, false));
        break;
      case '#': {
        const v = lookup(stack, value);
        const children = token[4] ?? [];
        if (!v) break;
        if (Array.isArray(v)) {
          for (const item of v) {
            stack.push(item);
            try {
              renderTokens(children, stack, state);
            } finally {
              stack.pop();
            }
          }
        } else if (typeof v === 'object' || typeof v === 'string' || typeof v === 'number') {
          stack.push(v);
          try {
            renderTokens(children, stack, state);
          } finally {
            stack.pop();
          }
        } else {
          renderTokens(children, stack, state);
        }
        break;
      }
      case '^': {
        const v = lookup(stack, value);
        if (!v || (Array.isArray(v) && v.length === 0)) renderTokens(token[4] ?? [], stack, state);
        break;
      }
      case '>':
        throw new TemplateFailure('TEMPLATE_PARTIALS_UNSUPPORTED', 'partials are not supported');
      default:
        // '!' comments and '=' delimiter changes produce no output.
        break;
    }
  }
}

/**
 * Renders `template` against `view` in `mode`. Never throws for template or data problems:
 * the failure is a value naming the reason (for the log's transformation section).
 */
export function renderTemplate(template: string, view: unknown, mode: TemplateMode, options: RenderOptions = {}): TemplateRenderResult {
  const maxBytes = options.maxOutputBytes ?? DEFAULT_MAX_TEMPLATE_OUTPUT_BYTES;
  try {
    const tokens = parseTokens(template);
    const state: RenderState = {
      mode,
      parts: [],
      length: 0,
      steps: 0,
      maxChars: maxBytes,
      maxSteps: options.maxSteps ?? DEFAULT_MAX_TEMPLATE_STEPS,
    };
    renderTokens(tokens, [view], state);
    let output = state.parts.join('');
    if (Buffer.byteLength(output, 'utf8') > maxBytes) {
      throw new TemplateFailure('TEMPLATE_OUTPUT_TOO_LARGE', `rendered output exceeds ${maxBytes} bytes; render less (e.g. a field rather than a whole body)`);
    }
    if (mode === 'text') output = output.replace(/[ \t]*[\r\n\u0085\u2028\u2029\v\f]+[ \t]*/g, ' ').trim();
    if (mode === 'json') {
      const problem = jsonSyntaxProblem(output);
      if (problem) throw new TemplateFailure('TEMPLATE_OUTPUT_INVALID_JSON', `rendered output is not valid JSON: ${problem}`);
    }
    return { ok: true, output };
  } catch (err) {
    if (err instanceof TemplateFailure) return { ok: false, code: err.code, error: err.message };
    if (err instanceof RangeError) {
      // Deeply nested sections overflowing the call stack.
      return { ok: false, code: 'TEMPLATE_TOO_COMPLEX', error: 'template nests sections too deeply; simplify it' };
    }
    throw err;
  }
}

/** The HTTP body mode for a webhook's headers: `json` unless a non-JSON Content-Type is set. */
export function templateModeForHttp(headers: Record<string, string> | undefined): TemplateMode {
  if (!headers) return 'json';
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'content-type') continue;
    const type = value.split(';', 1)[0]!.trim().toLowerCase();
    return type === 'application/json' || type.endsWith('+json') ? 'json' : 'plain';
  }
  return 'json';
}

// ------------------------------------------------------------------------------------------------
// JSON validity with a useful reason

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
    const snippet =
      (from > 0 ? '…' : '') + text.slice(from, located.position) + '⟪HERE⟫' + text.slice(located.position, to) + (to < text.length ? '…' : '');
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
          return fail(
            c === '}' ? 'a trailing comma before "}" is not allowed' : `expected an object key in double quotes, found ${describeChar(c)}`,
          );
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
