import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConditionSyntaxError, exchangeFromParts, parseCondition } from '../../../src/condition/index.js';

/**
 * Every vector of shared/conformance/predicates.json, each observed on real Undertow
 * (+ RESTHeart's predicates). shared/ lives beside the repository root, locally and in CI.
 */
interface Vector {
  readonly expr: string;
  readonly method: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly expect: boolean | 'parse-error';
  readonly source: string;
}

const vectorsUrl = new URL('../../../../shared/conformance/predicates.json', import.meta.url);
const vectors = JSON.parse(readFileSync(vectorsUrl, 'utf8')) as Vector[];

describe('conformance vectors (shared/conformance/predicates.json)', () => {
  it('has vectors to run', () => {
    expect(vectors.length).toBeGreaterThan(50);
  });

  it.each(vectors.map((vector, index) => [index, JSON.stringify(vector.expr), vector] as const))('#%i %s', (_index, _label, vector) => {
    // Header names differing only in case are separate header lines, as the vector file specifies.
    const exchange = exchangeFromParts({
      method: vector.method,
      path: vector.path,
      headers: Object.entries(vector.headers ?? {}),
    });
    if (vector.expect === 'parse-error') {
      expect(() => parseCondition(vector.expr)).toThrow(ConditionSyntaxError);
      return;
    }
    const condition = parseCondition(vector.expr);
    expect(condition.evaluate(exchange)).toBe(vector.expect);
  });
});
