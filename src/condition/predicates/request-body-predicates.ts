import { nonEmptyList, oneParameter, type PredicateDefinition } from '../compile/parameters.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';
import { containsKeys, isAbsent, isDocument, jsonEquals, leafKeys, parseExpectedJson, valueAtPath, type JsonDocument } from './json-document.js';

/**
 * The body as RESTHeart's predicates see it. `noBody` when the exchange cannot provide bodies
 * at all (RESTHeart: "not a BsonRequest", every bson-request-* predicate is false); otherwise
 * the parsed JSON, undefined when the request carries none.
 */
const NO_BODY = Symbol('no body');

function requestBody(scope: EvaluationScope): unknown {
  const read = scope.exchange.requestBody;
  if (read === undefined) return NO_BODY;
  try {
    return read.call(scope.exchange);
  } catch {
    // A body that cannot be read is no body; a condition must never fail the request.
    return undefined;
  }
}

/**
 * `bson-request-contains` (the body, each document of an array body, has every key) and
 * `bson-request-blacklist` (the body has none of them; a request without a body passes).
 */
function bodyKeysPredicate(name: string, parameter: string, test: (body: unknown, keys: readonly string[]) => boolean): PredicateDefinition {
  return {
    ...oneParameter(name, parameter, 'string[]'),
    readsRequestBody: true,
    build: (args, context) => {
      const keys = nonEmptyList(args.list(parameter), () => context.error('needs at least one property name', parameter));
      return (scope) => {
        const body = requestBody(scope);
        return body !== NO_BODY && test(body, keys.resolve(scope));
      };
    },
  };
}

export const bodyContainsPredicate = bodyKeysPredicate('bson-request-contains', 'keys', (body, keys) => containsKeys(body, keys, true));
export const bodyBlacklistPredicate = bodyKeysPredicate('bson-request-blacklist', 'blacklist', (body, keys) => !containsKeys(body, keys, false));

/**
 * `bson-request-whitelist`: every leaf key of the body is listed (or under a listed key). An
 * empty body, or none, passes; a non-empty document against an empty list does not.
 */
export const bodyWhitelistPredicate: PredicateDefinition = {
  ...oneParameter('bson-request-whitelist', 'whitelist', 'string[]'),
  required: [],
  readsRequestBody: true,
  build: (args) => {
    const list = args.optionalList('whitelist');
    return (scope) => {
      const body = requestBody(scope);
      if (body === NO_BODY) return false;
      if (body === undefined || body === null) return true;
      const whitelist = list?.resolve(scope) ?? [];
      if (isDocument(body)) return documentWhitelisted(body, whitelist);
      // RESTHeart rejects a scalar body with an error; a refusal is the same outcome for an ACL.
      if (!Array.isArray(body)) return false;
      return body.filter(isDocument).every((document) => documentWhitelisted(document, whitelist));
    };
  },
};

function documentWhitelisted(document: JsonDocument, whitelist: readonly string[]): boolean {
  if (Object.keys(document).length === 0) return true;
  if (whitelist.length === 0) return false;
  for (const leaf of leafKeys(document)) {
    if (!whitelist.some((allowed) => leaf === allowed || leaf.startsWith(`${allowed}.`))) return false;
  }
  return true;
}

/**
 * `bson-request-prop-equals`: the body document's property (dot notation) equals the JSON
 * value of `value`, e.g. `bson-request-prop-equals(key=status, value='"draft"')`. Numbers
 * compare by value (JSON.parse does not keep RESTHeart's int/double distinction).
 */
export const bodyPropertyEqualsPredicate: PredicateDefinition = {
  name: 'bson-request-prop-equals',
  parameters: { key: 'string', value: 'attribute' },
  defaultParameter: 'key',
  required: ['key', 'value'],
  readsRequestBody: true,
  build: (args) => {
    const key = args.string('key');
    const value = args.attribute('value');
    const fixedExpected = value.constant !== undefined ? parseExpectedJson(value.constant) : undefined;
    return (scope) => {
      const body = requestBody(scope);
      if (!isDocument(body)) return false;
      const actual = valueAtPath(body, key);
      if (isAbsent(actual)) return false;
      const expected = value.constant !== undefined ? fixedExpected : parseExpectedJson(value.read(scope));
      return expected !== undefined && jsonEquals(actual, expected.value);
    };
  },
};
