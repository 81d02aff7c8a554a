/**
 * A tool call's arguments against the tool's input schema (input-schema.ts), before anything is
 * read (SPEC §11): the keywords that schema uses and no others. Problems name the argument by its
 * path (`filter.status`, `ids[3]`), at most MAX_PROBLEMS of them; the walk stops there, so a huge
 * or deeply wrong value costs no more than a few problems' worth of work beyond its size.
 */
import type { JsonSchema, JsonType } from './input-schema.js';

const MAX_PROBLEMS = 5;
/** Deeper than any input type needs (recursive input types are described a few levels down at most). */
const MAX_DEPTH = 32;

export function checkArguments(schema: JsonSchema, args: unknown): string[] {
  const problems: string[] = [];
  check(schema, args ?? {}, '', problems, 0);
  return problems;
}

function check(schema: JsonSchema, value: unknown, path: string, problems: string[], depth: number): void {
  if (problems.length >= MAX_PROBLEMS) return;
  const name = path === '' ? 'the arguments' : path;
  if (depth > MAX_DEPTH) return void problems.push(`${name} nest deeper than ${MAX_DEPTH} levels`);
  const actual = typeOf(value);
  if (schema.type !== undefined) {
    const allowed = [schema.type].flat();
    const fits = allowed.includes(actual as JsonType) || (actual === 'integer' && allowed.includes('number'));
    if (!fits) return void problems.push(`${name} must be ${allowed.map(article).join(' or ')} (got ${describe(value, actual)})`);
  }
  if (schema.enum && !schema.enum.includes(value as string | null)) {
    return void problems.push(`${name} must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')} (got ${describe(value, actual)})`);
  }
  if (actual === 'integer' || actual === 'number') {
    const n = value as number;
    if (schema.minimum !== undefined && n < schema.minimum) problems.push(`${name} must be at least ${schema.minimum} (got ${n})`);
    if (schema.maximum !== undefined && n > schema.maximum) problems.push(`${name} must be at most ${schema.maximum} (got ${n})`);
  }
  if (actual === 'string' && schema.pattern !== undefined && !new RegExp(schema.pattern).test(value as string)) {
    problems.push(`${name} must match ${schema.pattern} (got ${describe(value, actual)})`);
  }
  if (actual === 'array') {
    const items = value as unknown[];
    if (schema.maxItems !== undefined && items.length > schema.maxItems) return void problems.push(`${name} holds ${items.length} items; at most ${schema.maxItems}`);
    if (schema.items) for (let i = 0; i < items.length && problems.length < MAX_PROBLEMS; i++) check(schema.items, items[i], `${path}[${i}]`, problems, depth + 1);
  }
  if (actual === 'object' && schema.properties) {
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      if (problems.length >= MAX_PROBLEMS) return;
      const at = path === '' ? key : `${path}.${key}`;
      const property = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
      if (property) check(property, object[key], at, problems, depth + 1);
      else if (schema.additionalProperties === false) {
        const known = Object.keys(schema.properties);
        problems.push(`${at} is not ${path === '' ? 'an argument of this tool' : `a field of ${path}`}${known.length ? ` (allowed: ${known.join(', ')})` : ' (it takes none)'}`);
      }
    }
    for (const key of schema.required ?? []) {
      if (!Object.hasOwn(object, key) && problems.length < MAX_PROBLEMS) problems.push(`${path === '' ? key : `${path}.${key}`} is required`);
    }
  }
}

function typeOf(value: unknown): JsonType | 'undefined' | 'other' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isInteger(value) ? 'integer' : Number.isFinite(value) ? 'number' : 'other';
    case 'object':
      return 'object';
    case 'undefined':
      return 'undefined';
    default:
      return 'other';
  }
}

function article(type: JsonType | JsonType[]): string {
  const t = String(type);
  return t === 'null' ? 'null' : t === 'integer' || t === 'object' || t === 'array' ? `an ${t}` : `a ${t}`;
}

function describe(value: unknown, actual: string): string {
  if (actual === 'object') return 'an object';
  if (actual === 'array') return 'an array';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
