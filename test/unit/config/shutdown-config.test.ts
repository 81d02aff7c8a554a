import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'shutdown-config' }, upstream: { url: 'http://127.0.0.1:1' } };

describe('shutdown: drainSeconds and timeoutSeconds (SPEC §2)', () => {
  it('defaults to a 5 s drain inside a 25 s timeout', () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.shutdown).toEqual({ drainSeconds: 5, timeoutSeconds: 25, deprecation: null });
  });

  it('takes fractions of a second and 0 (no drain)', () => {
    const { config, problems } = validateConfig({ ...base, shutdown: { drainSeconds: 0, timeoutSeconds: 2.5 } });
    expect(problems).toEqual([]);
    expect(config.shutdown).toMatchObject({ drainSeconds: 0, timeoutSeconds: 2.5 });
  });

  it('names each bad value, and a drain longer than the timeout it is counted in', () => {
    expect(validateConfig({ ...base, shutdown: { drainSeconds: -1, timeoutSeconds: 'soon' } }).problems).toEqual([
      'shutdown.drainSeconds: must be a number of seconds from 0 to 3600 (got -1)',
      'shutdown.timeoutSeconds: must be a number of seconds from 0 to 3600 (got "soon")',
    ]);
    expect(validateConfig({ ...base, shutdown: { drainSeconds: 30 } }).problems).toEqual([
      'shutdown.drainSeconds: must not exceed shutdown.timeoutSeconds (25); the timeout is counted from the signal and includes the drain',
    ]);
    expect(validateConfig({ ...base, shutdown: { drainSecs: 3 } }).problems[0]).toMatch(/^shutdown\.drainSecs: unknown option.*drainSeconds/);
  });

  it('still reads listen.shutdownGraceMs as the time after the drain, with a deprecation naming the new keys', () => {
    const { config, problems } = validateConfig({ ...base, listen: { shutdownGraceMs: 2000 } });
    expect(problems).toEqual([]);
    expect(config.shutdown.drainSeconds).toBe(5);
    expect(config.shutdown.timeoutSeconds).toBe(7);
    expect(config.shutdown.deprecation).toBe(
      'listen.shutdownGraceMs is deprecated: write shutdown: { drainSeconds: 5, timeoutSeconds: 7 } (the same behaviour: a 5 s drain, then in-flight requests may run 2 s more)',
    );
  });

  it('refuses listen.shutdownGraceMs beside shutdown.timeoutSeconds, and checks its range', () => {
    expect(validateConfig({ ...base, listen: { shutdownGraceMs: 2000 }, shutdown: { timeoutSeconds: 10 } }).problems).toEqual([
      'listen.shutdownGraceMs: replaced by shutdown.timeoutSeconds, which is also set; remove listen.shutdownGraceMs',
    ]);
    expect(validateConfig({ ...base, listen: { shutdownGraceMs: -5 } }).problems).toEqual(['listen.shutdownGraceMs: must be an integer from 0 to 600000 (got -5)']);
  });
});
