/**
 * A small MongoDB query matcher, used to split the results of a batched `$or` read back per
 * parent (each returned document already matched on the backend; we only need to know which of
 * the alternatives it matched), and to decide a subscription's find and readFilter on the state a
 * change carries (subscribe/seen.ts). It supports the comparison, logical, element and array
 * operators a join's find or a readFilter realistically uses. Anything else (`$regex`, `$expr`, `$type`, geo, text...) makes
 * `compileMatcher` return undefined and the caller reads those finds one by one instead, so a
 * document is never attributed by guesswork and no client-supplied regex runs in the proxy.
 */
import { isPlainObject } from '../../util/objects.js';
import { canonicalKey, compareValues, isEjsonLiteral } from './ejson.js';
import { candidateValues } from './paths.js';

export type Matcher = (doc: unknown) => boolean;

class Unsupported extends Error {}

/** Compiles a query document; undefined when it uses something this matcher does not implement. */
export function compileMatcher(filter: Record<string, unknown>): Matcher | undefined {
  try {
    return compileQuery(filter);
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

function compileQuery(query: Record<string, unknown>): Matcher {
  const parts: Matcher[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value) || value.length === 0) throw new Unsupported();
      const subs = value.map((q) => {
        if (!isPlainObject(q)) throw new Unsupported();
        return compileQuery(q);
      });
      if (key === '$and') parts.push((d) => subs.every((m) => m(d)));
      else if (key === '$or') parts.push((d) => subs.some((m) => m(d)));
      else parts.push((d) => !subs.some((m) => m(d)));
    } else if (key === '$comment') {
      continue;
    } else if (key.startsWith('$')) {
      throw new Unsupported();
    } else {
      const test = compileCondition(value);
      const path = key.split('.');
      parts.push((d) => test(candidateValues(d, path)));
    }
  }
  return (d) => parts.every((m) => m(d));
}

/** A test over the candidate values of one field path. */
type ValuesTest = (values: unknown[]) => boolean;

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value) || isEjsonLiteral(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

function compileCondition(condition: unknown): ValuesTest {
  if (isOperatorObject(condition)) {
    const tests = Object.entries(condition).map(([op, arg]) => compileOperator(op, arg));
    return (values) => tests.every((t) => t(values));
  }
  if (isPlainObject(condition) && Object.keys(condition).some((k) => k.startsWith('$')) && !isEjsonLiteral(condition)) {
    throw new Unsupported(); // a mix of operators and fields
  }
  return equals(condition);
}

function plainValue(value: unknown): void {
  if (isPlainObject(value) && '$regularExpression' in value) throw new Unsupported(); // pattern match
  if (value instanceof RegExp) throw new Unsupported();
}

function equals(value: unknown): ValuesTest {
  plainValue(value);
  const key = canonicalKey(value);
  const isNull = value === null;
  return (values) => (values.length === 0 ? isNull : values.some((v) => canonicalKey(v) === key));
}

function compare(arg: unknown, accept: (c: number) => boolean): ValuesTest {
  plainValue(arg);
  return (values) =>
    values.some((v) => {
      const c = compareValues(v, arg);
      return c !== undefined && accept(c);
    }) ||
    (values.length === 0 && arg === null && accept(0));
}

function compileOperator(op: string, arg: unknown): ValuesTest {
  switch (op) {
    case '$eq':
      return equals(arg);
    case '$ne': {
      const eq = equals(arg);
      return (values) => !eq(values);
    }
    case '$gt':
      return compare(arg, (c) => c > 0);
    case '$gte':
      return compare(arg, (c) => c >= 0);
    case '$lt':
      return compare(arg, (c) => c < 0);
    case '$lte':
      return compare(arg, (c) => c <= 0);
    case '$in':
    case '$nin': {
      if (!Array.isArray(arg)) throw new Unsupported();
      const tests = arg.map(equals);
      const any: ValuesTest = (values) => tests.some((t) => t(values));
      return op === '$in' ? any : (values) => !any(values);
    }
    case '$exists': {
      const want = Boolean(arg);
      return (values) => values.length > 0 === want;
    }
    case '$all': {
      if (!Array.isArray(arg) || arg.length === 0) throw new Unsupported();
      const tests = arg.map((a) => {
        if (isOperatorObject(a)) throw new Unsupported();
        return equals(a);
      });
      return (values) => tests.every((t) => t(values));
    }
    case '$size': {
      if (!Number.isInteger(arg)) throw new Unsupported();
      return (values) => values.some((v) => Array.isArray(v) && v.length === arg);
    }
    case '$not': {
      if (!isOperatorObject(arg)) throw new Unsupported();
      const inner = compileCondition(arg);
      return (values) => !inner(values);
    }
    case '$elemMatch': {
      if (!isPlainObject(arg)) throw new Unsupported();
      const element: (e: unknown) => boolean = isOperatorObject(arg)
        ? (
            (t) => (e: unknown) =>
              t(Array.isArray(e) ? [e, ...e] : [e])
          )(compileCondition(arg))
        : (
            (m) => (e: unknown) =>
              isPlainObject(e) && m(e)
          )(compileQuery(arg));
      return (values) => values.some((v) => Array.isArray(v) && v.some(element));
    }
    case '$comment':
      return () => true;
    default:
      throw new Unsupported();
  }
}

/**
 * Every field path a query document names (through `$and`, `$or` and `$nor`): a document missing
 * one of them may have been read without it (a field hidden from the reader) rather than lack it.
 */
export function filterPaths(filter: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (q: Record<string, unknown>): void => {
    for (const [key, value] of Object.entries(q)) {
      if (key === '$and' || key === '$or' || key === '$nor') {
        if (Array.isArray(value)) for (const sub of value) if (isPlainObject(sub)) walk(sub);
      } else if (!key.startsWith('$')) out.push(key);
    }
  };
  walk(filter);
  return out;
}
