import { oneParameter, type PredicateDefinition } from '../compile/parameters.js';
import { readResponseHeader } from '../attributes/exchange-readers.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';

/** Undertow compares methods as `HttpString`s: ASCII case-insensitive. */
function methodMatches(methods: ReadonlySet<string>, method: string): boolean {
  if (methods.has(method)) return true;
  // Node's parser hands over upper-case methods, so the copy toUpperCase makes is rarely needed.
  for (let i = 0; i < method.length; i++) {
    const c = method.charCodeAt(i);
    if (c >= 97 && c <= 122) return methods.has(method.toUpperCase());
  }
  return false;
}

const toUpperSet = (values: readonly string[]): ReadonlySet<string> => new Set(values.map((v) => v.toUpperCase()));

export const methodPredicate: PredicateDefinition = {
  ...oneParameter('method', 'value', 'string[]'),
  build: (args) => {
    const list = args.list('value');
    if (list.fixed !== undefined) {
      const methods = toUpperSet(list.fixed);
      return (scope) => methodMatches(methods, scope.exchange.method);
    }
    return (scope) => methodMatches(toUpperSet(list.resolve(scope)), scope.exchange.method);
  },
};

export const securePredicate: PredicateDefinition = {
  name: 'secure',
  parameters: {},
  required: [],
  build: () => (scope) => scope.exchange.secure,
};

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'DELETE', 'PUT', 'HEAD', 'OPTIONS']);

export const idempotentPredicate: PredicateDefinition = {
  name: 'idempotent',
  parameters: {},
  required: [],
  build: () => (scope) => methodMatches(IDEMPOTENT_METHODS, scope.exchange.method),
};

/** The response Content-Length as a number, or undefined when absent or not a number. */
function responseContentLength(scope: EvaluationScope): number | undefined {
  const header = readResponseHeader(scope.exchange, 'content-length');
  if (header === null || !/^\d+$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

function contentSizePredicate(name: string, parameter: string, compare: (length: number, limit: number) => boolean): PredicateDefinition {
  return {
    ...oneParameter(name, parameter, 'long'),
    readsResponse: true,
    build: (args) => {
      const limit = args.number(parameter);
      return (scope) => {
        const length = responseContentLength(scope);
        return length !== undefined && compare(length, limit);
      };
    },
  };
}

// Undertow meant these for compression decisions: all four read the *response*
// Content-Length, request-larger-than and request-smaller-than included despite their names
// (verified on undertow-core). Kept as is so that conditions mean the same in both products.
export const maxContentSizePredicate = contentSizePredicate('max-content-size', 'value', (length, limit) => length > limit);
export const minContentSizePredicate = contentSizePredicate('min-content-size', 'value', (length, limit) => length < limit);
export const requestLargerThanPredicate = contentSizePredicate('request-larger-than', 'size', (length, limit) => length > limit);
export const requestSmallerThanPredicate = contentSizePredicate('request-smaller-than', 'size', (length, limit) => length < limit);
