import { describe, expect, it } from 'vitest';
import { ConditionSyntaxError, parseCondition } from '../../../src/condition/index.js';
import { runPredicateTest } from '../../../src/cli/commands/predicate.js';
import { REGEX_COST_BUDGET, REGEX_MAX_INPUT_CHARS, REGEX_MAX_POSITIONS, REGEX_MIN_INPUT_CHARS } from '../../../src/condition/regex/regex-cost.js';
import { exchangeFromParts } from '../../../src/condition/index.js';

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i.toString(36)}abc`).join('|');
/** The attack shape: a large alternation under a star. */
const costly = `regex(pattern='(?:${words(200)})*z', value='%{i,X-Big}')`;

function refusal(expression: string): string {
  try {
    parseCondition(expression);
  } catch (error) {
    expect(error).toBeInstanceOf(ConditionSyntaxError);
    return (error as Error).message;
  }
  throw new Error('the condition was accepted');
}

describe('regex cost bound', () => {
  it('refuses at parse a pattern whose cost on the minimum input exceeds the budget, naming the part and the limit', () => {
    const message = refusal(costly);
    expect(message).toMatch(/too costly/);
    expect(message).toContain('(?:w0abc|w1abc'); // the heaviest part, in its translated form
    expect(message).toContain(`at most ${REGEX_MAX_POSITIONS}`);
    expect(message).toContain(String(REGEX_COST_BUDGET));
  });

  it('counts {n,m} as the engine runs it (unrolled)', () => {
    expect(refusal(`regex('(?:[a-z]{1,20}[0-9]{1,20}){1,16}')`)).toMatch(/too costly/);
    expect(() => parseCondition(`regex('^/api/v[0-9]+/orders/[a-f0-9]{16}$')`)).not.toThrow();
  });

  it('accepts the largest allowed pattern, and it runs only on inputs it can afford', () => {
    // REGEX_MAX_POSITIONS - 1 single-character alternatives and the final z: exactly at the limit.
    const alternatives = Array.from({ length: REGEX_MAX_POSITIONS - 1 }, (_, i) => String.fromCharCode(0x4e00 + i)).join('|');
    const condition = parseCondition(`regex(pattern='(?:${alternatives})*z', value='%{i,X-Big}')`);
    const afford = Math.floor(REGEX_COST_BUDGET / REGEX_MAX_POSITIONS);
    expect(afford).toBeGreaterThanOrEqual(REGEX_MIN_INPUT_CHARS);
    const matching = (n: number) => exchangeFromParts({ method: 'GET', path: '/', headers: [['X-Big', `${'\u4e00'.repeat(n - 1)}z`]] });
    expect(condition.evaluate(matching(afford))).toBe(true);
    // One character more than it affords: the engine is not run, and the input does not match.
    expect(condition.evaluate(matching(afford + 1))).toBe(false);
  });

  it('never runs any pattern on more than REGEX_MAX_INPUT_CHARS characters', () => {
    const condition = parseCondition(`regex(pattern='z$', value='%{i,X-Big}')`);
    const at = (n: number) => exchangeFromParts({ method: 'GET', path: '/', headers: [['X-Big', `${'a'.repeat(n - 1)}z`]] });
    expect(condition.evaluate(at(REGEX_MAX_INPUT_CHARS))).toBe(true);
    expect(condition.evaluate(at(REGEX_MAX_INPUT_CHARS + 1))).toBe(false);
  });

  it('`outrigger predicate test` refuses the costly pattern with exit 2 and the message', () => {
    const result = runPredicateTest(costly, { header: ['X-Big:z'] });
    expect(result.exitCode).toBe(2);
    expect(result.output).toMatch(/too costly to run on every request/);
  });
});
