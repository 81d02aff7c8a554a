import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConditionSyntaxError, exchangeFromParts, parseCondition } from '../../../src/condition/index.js';

/**
 * Every vector of test/conformance/predicates.json, each observed on real Undertow
 * (+ RESTHeart's predicates). The file is the project's copy of the team's shared vectors, kept
 * in the repository so that `npm test` passes on any clone (test/conformance/README.md).
 */
interface Vector {
  readonly expr: string;
  readonly method: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly expect: boolean | 'parse-error';
  readonly source: string;
}

const vectorsUrl = new URL('../../conformance/predicates.json', import.meta.url);
const vectors = JSON.parse(readFileSync(vectorsUrl, 'utf8')) as Vector[];

describe('conformance vectors (test/conformance/predicates.json)', () => {
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
