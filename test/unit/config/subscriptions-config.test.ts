/** `subscriptions:` (SPEC §6.5): defaults, bounds, and typos named with their path. */
import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';

describe('subscriptions config', () => {
  it('defaults to SPEC §6.5', () => {
    const { config, problems } = validateConfig({ service: { id: 's' }, upstream: { url: 'http://127.0.0.1:1' } });
    expect(problems).toEqual([]);
    expect(config.subscriptions).toEqual({
      retention: { changes: 10_000, minutes: 10 },
      maxPerPrincipal: 20,
      maxPerProcess: 10_000,
      maxBufferedEvents: 1000,
      heartbeatSeconds: 15,
      webSockets: { maxPerAddress: 100, maxPerPrincipal: 20, maxPerProcess: 5000, idleSeconds: 120 },
    });
  });

  it('names bad values and unknown keys', () => {
    const { problems } = validateConfig({ upstream: { url: 'http://127.0.0.1:1' }, subscriptions: { maxPerPrincipal: 0, retention: { minutes: 'ten' }, maxPerProces: 3 } });
    expect(problems.join('\n')).toMatch(/subscriptions\.maxPerPrincipal/);
    expect(problems.join('\n')).toMatch(/subscriptions\.retention\.minutes/);
    expect(problems.join('\n')).toMatch(/subscriptions\.maxPerProces/);
  });

  it('names bad WebSocket bounds (issue 53)', () => {
    const { problems } = validateConfig({ upstream: { url: 'http://127.0.0.1:1' }, subscriptions: { webSockets: { maxPerAddress: 0, idleSeconds: 'soon', maxPerUser: 3 } } });
    expect(problems.join('\n')).toMatch(/subscriptions\.webSockets\.maxPerAddress/);
    expect(problems.join('\n')).toMatch(/subscriptions\.webSockets\.idleSeconds/);
    expect(problems.join('\n')).toMatch(/subscriptions\.webSockets\.maxPerUser/);
  });
});
