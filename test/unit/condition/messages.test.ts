import { describe, expect, it } from 'vitest';
import { ConditionSyntaxError, parseCondition } from '../../../src/condition/index.js';

function errorOf(text: string): ConditionSyntaxError {
  try {
    parseCondition(text, { allowUserVariables: true });
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return error;
    throw error;
  }
  throw new Error(`${text} parsed`);
}

describe('condition messages a person can act on', () => {
  it("a missing ')' is named as such and points at the '(' left open", () => {
    const top = errorOf("(method(GET) and path-prefix('/a')");
    expect(top.message).toMatch(/missing '\)': this '\(' is never closed/);
    expect(top.position).toBe(0);
    const inner = errorOf("method(GET) and (path('/a') or path('/b')");
    expect(inner.message).toMatch(/missing '\)'/);
    expect(inner.position).toBe(16);
    expect(errorOf("path('/a'))").message).toMatch(/there is no '\(' to close/);
  });

  it('an unknown predicate name gets the closest known one', () => {
    expect(errorOf("path-prefx('/a')").message).toMatch(/no predicate named path-prefx; did you mean path-prefix\?/);
    expect(errorOf('methd(GET)').message).toMatch(/did you mean method\?/);
    expect(errorOf('completely-unknown(1)').message).not.toMatch(/did you mean/);
  });
});
