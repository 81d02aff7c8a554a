import type { PredicateDefinition } from '../compile/parameters.js';
import { ipMatchPredicate } from './ip-match.js';
import { pathPredicate, pathPrefixPredicate, pathSuffixPredicate, pathTemplatePredicate } from './path-predicates.js';
import { queryParametersBlacklistPredicate, queryParametersContainPredicate, queryParametersSizePredicate, queryParametersWhitelistPredicate } from './query-parameter-predicates.js';
import { regexPredicate } from './regex-predicate.js';
import { bodyBlacklistPredicate, bodyContainsPredicate, bodyPropertyEqualsPredicate, bodyWhitelistPredicate } from './request-body-predicates.js';
import {
  idempotentPredicate,
  maxContentSizePredicate,
  methodPredicate,
  minContentSizePredicate,
  requestLargerThanPredicate,
  requestSmallerThanPredicate,
  securePredicate,
} from './request-predicates.js';
import { containsPredicate, equalsPredicate, existsPredicate, gtePredicate, inPredicate, ltePredicate } from './value-predicates.js';

/**
 * The predicate names a condition may use: undertow-core's (minus `auth-required`,
 * `dispatcher`, `file` and `directory`, which mean nothing in a proxy) and RESTHeart's
 * security plugin's. `true` and `false` are literals handled by the parser.
 */
const DEFINITIONS: readonly PredicateDefinition[] = [
  pathPredicate,
  pathPrefixPredicate,
  pathSuffixPredicate,
  pathTemplatePredicate,
  methodPredicate,
  equalsPredicate,
  containsPredicate,
  existsPredicate,
  regexPredicate,
  securePredicate,
  idempotentPredicate,
  maxContentSizePredicate,
  minContentSizePredicate,
  requestLargerThanPredicate,
  requestSmallerThanPredicate,
  ipMatchPredicate,
  queryParametersContainPredicate,
  queryParametersBlacklistPredicate,
  queryParametersWhitelistPredicate,
  queryParametersSizePredicate,
  bodyContainsPredicate,
  bodyWhitelistPredicate,
  bodyBlacklistPredicate,
  bodyPropertyEqualsPredicate,
  inPredicate,
  gtePredicate,
  ltePredicate,
];

const BY_NAME: ReadonlyMap<string, PredicateDefinition> = new Map(DEFINITIONS.map((definition) => [definition.name, definition]));

export function findPredicate(name: string): PredicateDefinition | undefined {
  return BY_NAME.get(name);
}

export function predicateNames(): string[] {
  return [...BY_NAME.keys(), 'true', 'false'].sort();
}
