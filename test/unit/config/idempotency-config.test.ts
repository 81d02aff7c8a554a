/** `idempotency:` (SPEC §14; src/config/sections.ts): defaults, and every mistake named by its path. */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'idem-config' }, upstream: { url: 'http://127.0.0.1:1' } };
const problems = (idempotency: unknown) => validateConfig({ ...base, idempotency }).problems;

describe('idempotency config', () => {
  it('defaults to 24 h records, a 60 s lock, 1 MiB answers and bodies, nothing required', () => {
    const { config, problems: none } = validateConfig(base);
    expect(none).toEqual([]);
    expect(config.idempotency).toEqual({ ttlSeconds: 86_400, lockSeconds: 60, maxBodyBytes: 1024 * 1024, maxRequestBytes: 1024 * 1024, required: [] });
  });

  it('reads required conditions and refuses one that reads the body or the response, or does not parse', () => {
    expect(problems({ required: ['path-prefix(/orders) and method(POST)'] })).toEqual([]);
    expect(problems({ required: ['bson-request-contains(a)'] }).join()).toMatch(/idempotency\.required\[0\].*may read neither a request body nor a response/);
    expect(problems({ required: ['path-prefix('] }).join()).toMatch(/idempotency\.required\[0\].*is not a valid condition/);
  });

  it('names out-of-range numbers and unknown keys by their path', () => {
    expect(problems({ ttlSeconds: 0 }).join()).toMatch(/idempotency\.ttlSeconds/);
    expect(problems({ lockSeconds: 7200 }).join()).toMatch(/idempotency\.lockSeconds/);
    expect(problems({ maxBodyBytes: -1 }).join()).toMatch(/idempotency\.maxBodyBytes/);
    expect(problems({ ttlSecond: 5 }).join()).toMatch(/idempotency\.ttlSecond.*unknown option.*ttlSeconds/);
  });
});
