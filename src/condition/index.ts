/**
 * The condition language: Undertow's predicate language as RESTHeart's ACL uses it, shared by
 * ACL permissions and webhook conditions. Parse once when a document is written
 * (`parseCondition`), evaluate on every request (`condition.evaluate(exchange)`).
 */
export { parseCondition, type Condition, type ParseConditionOptions } from './condition.js';
export { ConditionSyntaxError, pointAtPosition } from './errors.js';
export type { Exchange, ExchangeTls, ExchangeUser } from './exchange.js';
export { exchangeFromParts, type ExchangeParts, type HeaderInput } from './exchange-from-parts.js';
export { linearEngineAvailable } from './regex/linear-regex.js';
