/** `outrigger check` on the limits: block (SPEC §10): every mistake named by its path, exit 1; a good block passes. */
import { describe, expect, it } from 'vitest';
import { runCli, writeTempFile } from '../../support/clients/cli.js';

const base = { service: { id: 'check-limits' }, upstream: { url: 'http://127.0.0.1:9' } };

describe('outrigger check: limits', () => {
  it('names a zero window, a two-day window and an unknown by in one run', async () => {
    const file = writeTempFile('limits-bad.yaml', {
      ...base,
      limits: {
        policies: [
          { name: 'zero', by: 'key', limit: 10, window: '0s' },
          { name: 'huge', by: 'key', limit: 10, window: '2d' },
          { name: 'who', by: 'tenant', limit: 10, window: '1m' },
        ],
      },
    });
    const { code, stdout, stderr } = await runCli(['check', '-c', file]);
    const out = stdout + stderr;
    expect(code).toBe(1);
    expect(out).toContain('limits.policies[0].window: must be a duration from 1s to 1d');
    expect(out).toContain('limits.policies[1].window: must be a duration from 1s to 1d');
    expect(out).toMatch(/limits\.policies\[1\]\.window: .*calendar quota/);
    expect(out).toContain('limits.policies[2].by: must be one of key, user, client, service');
  });

  it('accepts a good block', async () => {
    const file = writeTempFile('limits-good.yaml', {
      ...base,
      limits: {
        policies: [
          { name: 'per-key', by: 'key', limit: 100, window: '60s' },
          { name: 'monthly', by: 'key', quota: { limit: 100000, period: 'month' } },
        ],
      },
    });
    const { code, stdout, stderr } = await runCli(['check', '-c', file]);
    expect(code, stdout + stderr).toBe(0);
  });
});
