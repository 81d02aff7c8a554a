import { ConditionSyntaxError, exchangeFromParts, parseCondition, type ExchangeParts } from '../../../src/condition/index.js';

/** Parses `expression` and evaluates it on the request `parts` describe. */
export function matches(expression: string, parts: ExchangeParts = {}, allowUserVariables = false): boolean {
  return parseCondition(expression, { allowUserVariables }).evaluate(exchangeFromParts(parts));
}

/** The syntax error `expression` raises; fails the test when it parses. */
export function syntaxError(expression: string, allowUserVariables = false): ConditionSyntaxError {
  try {
    parseCondition(expression, { allowUserVariables });
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected a syntax error for ${expression}`);
}
