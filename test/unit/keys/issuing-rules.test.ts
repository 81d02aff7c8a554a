import { describe, expect, it } from 'vitest';
import { OutriggerError } from '../../../src/errors.js';
import { checkRequestedRoles, keyLifetimeDays, readIssueRequest, readRotateRequest, type KeyPolicy } from '../../../src/keys/issuing-rules.js';

const policy = (max: number, from: 'permission' | 'service' = 'permission'): KeyPolicy => ({
  permissionId: 'p1',
  availableRoles: ['reader', 'writer'],
  maxExpiresInDays: max,
  maxExpiresFrom: from,
  maxKeysPerUser: 3,
});

function failure(run: () => unknown): OutriggerError {
  try {
    run();
  } catch (error) {
    if (error instanceof OutriggerError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('POST /keys body (SPEC §5.3 step 4)', () => {
  it('takes name, roles and expiresIn, ignores other fields and repeated roles', () => {
    expect(readIssueRequest({ name: 'ci', roles: ['reader', 'reader'], expiresIn: 7, _id: 'mine', owner: 'root' })).toEqual({ name: 'ci', roles: ['reader'], expiresIn: 7 });
    expect(readIssueRequest({ name: 'ci' })).toEqual({ name: 'ci', roles: [], expiresIn: undefined });
  });

  const cases: Array<[string, unknown, RegExp]> = [
    ['not an object', [1], /body must be a JSON object/],
    ['name missing', {}, /^name is required/],
    ['name empty', { name: '' }, /^name must be a non-empty string/],
    ['name blank', { name: '   ' }, /^name must be a non-empty string/],
    ['name not a string', { name: 5 }, /^name must be a non-empty string/],
    ['name too long', { name: 'x'.repeat(101) }, /^name must be at most 100 characters \(got 101\)/],
    ['roles not an array', { name: 'a', roles: 'reader' }, /^roles must be an array of strings/],
    ['roles with a number', { name: 'a', roles: ['reader', 1] }, /^roles must be an array of strings/],
    ['expiresIn zero', { name: 'a', expiresIn: 0 }, /^expiresIn must be a positive integer/],
    ['expiresIn fractional', { name: 'a', expiresIn: 1.5 }, /^expiresIn must be a positive integer/],
    ['expiresIn a string', { name: 'a', expiresIn: '7' }, /^expiresIn must be a positive integer/],
  ];
  for (const [what, body, message] of cases) {
    it(`answers 400 naming the field: ${what}`, () => {
      const error = failure(() => readIssueRequest(body));
      expect(error.status).toBe(400);
      expect(error.message).toMatch(message);
    });
  }

  it('counts the name in characters, not bytes', () => {
    expect(readIssueRequest({ name: '⛵'.repeat(100) }).name).toHaveLength(100);
  });

  it('reports every problem at once', () => {
    const error = failure(() => readIssueRequest({ roles: 'x', expiresIn: -1 }));
    expect(error.message).toMatch(/name is required.*roles must be.*expiresIn must be/);
  });
});

describe('roles and lifetime (SPEC §5.3 steps 5 and 6)', () => {
  it('refuses roles outside apiKeys.roles with 403 naming them', () => {
    const error = failure(() => checkRequestedRoles(policy(30), ['reader', 'admin', 'ops']));
    expect(error.status).toBe(403);
    expect(error.message).toMatch(/"admin", "ops"/);
    expect(error.message).not.toMatch(/"reader"/);
    expect(() => checkRequestedRoles(policy(30), ['writer'])).not.toThrow();
    expect(() => checkRequestedRoles(policy(30), [])).not.toThrow();
  });

  it('defaults the lifetime to min(90, the maximum)', () => {
    expect(keyLifetimeDays(policy(30), undefined)).toBe(30);
    expect(keyLifetimeDays(policy(90), undefined)).toBe(90);
    expect(keyLifetimeDays(policy(3650), undefined)).toBe(90);
  });

  it('refuses a lifetime above the maximum with 400 naming it', () => {
    expect(keyLifetimeDays(policy(30), 30)).toBe(30);
    const error = failure(() => keyLifetimeDays(policy(30), 31));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/expiresIn must be at most 30 days.*max-expires-in-days of permission "p1"/);
    expect(failure(() => keyLifetimeDays(policy(60, 'service'), 61)).message).toMatch(/at most 60 days.*apiKeys\.maxExpiresInDays/);
  });

  it('a rotation takes graceHours from 0 to 168 (fractions too), and nothing else; each refusal names the bound', () => {
    for (const graceHours of [0, 0.001, 24, 168]) expect(readRotateRequest({ graceHours, other: 'ignored' })).toEqual({ graceHours });
    const message = (body: unknown) => (failure(() => readRotateRequest(body)) as OutriggerError).message;
    expect(message({ graceHours: 168.001 })).toMatch(/graceHours must be at most 168 \(7 days/);
    expect(message({ graceHours: -0.5 })).toMatch(/graceHours must be at least 0/);
    expect(message({ graceHours: Number.NaN })).toMatch(/must be a number of hours from 0 to 168/);
    expect(message({ graceHours: '1' })).toMatch(/must be a number of hours from 0 to 168 \(got "1"\)/);
    expect(message({})).toMatch(/graceHours is required/);
    expect(message(null)).toMatch(/the body must be a JSON object/);
    expect((failure(() => readRotateRequest({})) as OutriggerError).status).toBe(400);
  });
});
