import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:1' } };
const check = (limits: unknown) => validateConfig({ ...base, limits });

describe('limits: in the config (SPEC §10)', () => {
  it('reads policies with their defaults', () => {
    const { config, problems } = check({
      policies: [
        { name: 'per-key', by: 'key', limit: 100, window: '60s', condition: "path-prefix('/shop')", roles: ['reader'], units: 'cost' },
        { name: 'monthly', by: 'key', quota: { limit: 100000, period: 'month' } },
        { name: 'svc', by: 'service', limit: 5000, window: 1 },
      ],
    });
    expect(problems).toEqual([]);
    expect(config.limits).toEqual({
      headers: true,
      onRedisUnavailable: 'local',
      policies: [
        { name: 'per-key', by: 'key', limit: 100, window: { seconds: 60 }, condition: "path-prefix('/shop')", roles: ['reader'], units: 'cost' },
        { name: 'monthly', by: 'key', limit: 100000, window: { period: 'month' }, condition: null, roles: null, units: 'requests' },
        { name: 'svc', by: 'service', limit: 5000, window: { seconds: 1 }, condition: null, roles: null, units: 'requests' },
      ],
    });
    expect(validateConfig(base).config.limits).toEqual({ policies: [], headers: true, onRedisUnavailable: 'local' });
  });

  it('names every mistake by its path in one run', () => {
    const { problems } = check({
      policies: [
        { name: 'ok', by: 'key', limit: 10, window: '1m' },
        { name: 'zero', by: 'key', limit: 10, window: '0s' },
        { name: 'huge', by: 'key', limit: 10, window: '2d' },
        { name: 'ok', by: 'everyone', limit: 0, window: '1h', units: 'bytes', extra: 1 },
        { name: 'both', by: 'user', limit: 1, window: '1s', quota: { limit: 1, period: 'day' } },
        { name: 'badquota', by: 'user', quota: { limit: 1, period: 'week' } },
        { name: 'bad name!', limit: 1, window: '1s', condition: 'path-prefix(' },
        { name: 'body', by: 'client', limit: 1, window: '1s', condition: 'bson-request-contains(a)', roles: [] },
      ],
      onRedisUnavailable: 'maybe',
      header: true,
    });
    const expectOne = (pattern: RegExp) =>
      expect(
        problems.filter((p) => pattern.test(p)),
        `${pattern}\n${problems.join('\n')}`,
      ).toHaveLength(1);
    expectOne(/^limits\.policies\[1\]\.window: must be a duration from 1s to 1d.*0 seconds/);
    expectOne(/^limits\.policies\[2\]\.window: must be a duration from 1s to 1d.*calendar quota/);
    expectOne(/^limits\.policies\[3\]\.name: "ok" is already the name of another policy/);
    expectOne(/^limits\.policies\[3\]\.by: must be one of key, user, client, service/);
    expectOne(/^limits\.policies\[3\]\.limit: must be an integer from 1 to 1000000000 \(got 0\)/);
    expectOne(/^limits\.policies\[3\]\.units: must be one of requests, cost/);
    expectOne(/^limits\.policies\[3\]\.extra: unknown option/);
    expectOne(/^limits\.policies\[4\]: set either limit and window, or quota, not both/);
    expectOne(/^limits\.policies\[5\]\.quota\.period: must be one of day, month/);
    expectOne(/^limits\.policies\[6\]\.name: must be 1-32 letters/);
    expectOne(/^limits\.policies\[6\]\.by: is required/);
    expectOne(/^limits\.policies\[6\]\.condition: is not a valid condition/);
    expectOne(/^limits\.policies\[7\]\.condition: may not read the request body/);
    expectOne(/^limits\.policies\[7\]\.roles: must name at least one role/);
    expectOne(/^limits\.onRedisUnavailable: must be one of local, allow, deny/);
    expectOne(/^limits\.header: unknown option \(did you mean "headers"/);
  });
});
