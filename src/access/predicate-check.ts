import { ConditionSyntaxError, parseCondition } from '../condition/index.js';

/** Write-time check of a condition: null when it parses, else the error with its position. */
export function checkPredicateSyntax(text: string, allowUserVariables: boolean): string | null {
  try {
    parseCondition(text, { allowUserVariables });
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `is not a valid condition: ${error.message} (at position ${error.position})`;
    throw error;
  }
}
