import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';
import { AnswerBudget, jsonStringBytes } from '../../../src/mcp/answer-budget.js';

describe('the /mcp answer budget (issue 53)', () => {
  it('jsonStringBytes is the length JSON.stringify gives, escapes and multi-byte characters included', () => {
    for (const text of ['', 'plain', '{"a":"b\\\\c"}', 'line\nbreak\ttab\u0001\u001f', 'é€😀', '\ud800 lone', 'x\udc00'])
      expect(jsonStringBytes(text), JSON.stringify(text)).toBe(Buffer.byteLength(JSON.stringify(text)));
  });

  it('takes what fits; once something did not, nothing more, and the first that did not is named', async () => {
    const budget = new AnswerBudget(100);
    expect(budget.take(60, 'a')).toBe(true);
    expect(budget.take(50, 'b')).toBe(false);
    expect(budget.take(1, 'c')).toBe(false);
    expect([budget.left, budget.filled]).toEqual([40, 'b']);
    // One task at a time, in order, a failed one not stopping the next.
    const order: string[] = [];
    const slow = budget.serial(async () => {
      await new Promise((r) => setTimeout(r, 30));
      order.push('slow');
      throw new Error('x');
    });
    const fast = budget.serial(async () => order.push('fast'));
    await expect(slow).rejects.toThrow('x');
    await fast;
    expect(order).toEqual(['slow', 'fast']);
  });

  it('mcp.maxResponseBytes: graphql.maxResponseBytes unless set; at least 64 KiB', () => {
    expect(validateConfig({}).config!.mcp.maxResponseBytes).toBe(16 * 1024 * 1024);
    expect(validateConfig({ graphql: { maxResponseBytes: 2 * 1024 * 1024 } }).config!.mcp.maxResponseBytes).toBe(2 * 1024 * 1024);
    expect(validateConfig({ mcp: { maxResponseBytes: 1024 * 1024 } }).config!.mcp.maxResponseBytes).toBe(1024 * 1024);
    expect(validateConfig({ mcp: { maxResponseBytes: 100 } }).problems.join('\n')).toMatch(/mcp\.maxResponseBytes/);
  });
});
