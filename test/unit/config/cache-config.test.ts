/** `cache:` (SPEC §12; src/config/cache-config.ts): defaults, and every mistake named by its path. */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'cache-config' }, upstream: { url: 'http://127.0.0.1:1' } };
const problems = (cache: unknown) => validateConfig({ ...base, cache }).problems;

describe('cache config', () => {
  it('defaults to no rules (nothing cached), 64 MiB, 1 MiB entries, local consistency', () => {
    const { config, problems: none } = validateConfig(base);
    expect(none).toEqual([]);
    expect(config.cache).toEqual({ rules: [], maxBytes: 64 * 1024 * 1024, maxEntryBytes: 1024 * 1024, consistency: 'local' });
  });

  it('reads rules, naming unnamed ones by index', () => {
    const { config, problems: none } = validateConfig({
      ...base,
      cache: {
        rules: [
          { when: 'path-prefix(/a)', maxAgeSeconds: 5 },
          { name: 'b', when: 'method(GET)', maxAgeSeconds: 60 },
        ],
        consistency: 'strong',
      },
    });
    expect(none).toEqual([]);
    expect(config.cache.rules).toEqual([
      { name: 'rule0', when: 'path-prefix(/a)', maxAgeSeconds: 5 },
      { name: 'b', when: 'method(GET)', maxAgeSeconds: 60 },
    ]);
    expect(config.cache.consistency).toBe('strong');
  });

  it.each([
    [{ rules: 'all' }, /^cache\.rules: must be a list of rules/],
    [{ rules: [{ maxAgeSeconds: 5 }] }, /^cache\.rules\[0\]\.when: is required/],
    [{ rules: [{ when: 'path-prefix(/a', maxAgeSeconds: 5 }] }, /^cache\.rules\[0\]\.when: is not a valid condition/],
    [{ rules: [{ when: 'bson-request-contains(a)', maxAgeSeconds: 5 }] }, /^cache\.rules\[0\]\.when: may not read the request body/],
    [{ rules: [{ when: 'true' }] }, /^cache\.rules\[0\]\.maxAgeSeconds: is required/],
    [{ rules: [{ when: 'true', maxAgeSeconds: 0 }] }, /^cache\.rules\[0\]\.maxAgeSeconds: must be an integer from 1 to 86400/],
    [{ rules: [{ when: 'true', maxAgeSeconds: 5, ttl: 3 }] }, /^cache\.rules\[0\]\.ttl: unknown option/],
    [
      {
        rules: [
          { name: 'a', when: 'true', maxAgeSeconds: 5 },
          { name: 'a', when: 'true', maxAgeSeconds: 5 },
        ],
      },
      /^cache\.rules\[1\]\.name: "a" is already the name/,
    ],
    [{ rules: [{ name: 'a b', when: 'true', maxAgeSeconds: 5 }] }, /^cache\.rules\[0\]\.name: must be 1-32 letters/],
    [{ maxBytes: 1000, maxEntryBytes: 2000 }, /^cache\.maxEntryBytes: must not exceed cache\.maxBytes/],
    [{ consistency: 'eventual' }, /^cache\.consistency: must be one of local, strong/],
    [{ maxbytes: 5 }, /^cache\.maxbytes: unknown option/],
  ])('refuses %j naming the path', (cache, message) => {
    expect(problems(cache).join('\n')).toMatch(message);
  });
});
