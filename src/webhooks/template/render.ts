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
import { jsonSyntaxProblem } from './json-syntax.js';
import { parseTokens, TemplateFailure, type TemplateErrorCode, type Token } from './parse.js';
import { isHeaderMap } from './view.js';

type TemplateMode = 'json' | 'html' | 'text' | 'plain';

const DEFAULT_MAX_TEMPLATE_OUTPUT_BYTES = 1024 * 1024;
/** Token visits allowed per render (bounds CPU, e.g. sections nested over large arrays). */
const DEFAULT_MAX_TEMPLATE_STEPS = 2_000_000;

export type TemplateRenderResult = { readonly ok: true; readonly output: string } | { readonly ok: false; readonly code: TemplateErrorCode; readonly error: string };

interface RenderOptions {
  readonly maxOutputBytes?: number;
  readonly maxSteps?: number;
}

const BLOCKED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
const NOT_FOUND = Symbol('not found');

/** Own data only: never inherited members, never the blocked names, never functions. */
function member(container: unknown, name: string): unknown {
  if (container === null || container === undefined) return NOT_FOUND;
  if (BLOCKED_NAMES.has(name)) return NOT_FOUND;
  if (typeof container === 'object') {
    const key = isHeaderMap(container) ? name.toLowerCase() : name;
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
