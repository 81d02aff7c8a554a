import { describe, expect, it } from 'vitest';
import { loadConfigText } from '../../../src/config/load.js';
import { startSummary, type StartFacts } from '../../../src/observability/start-summary.js';

const { config } = loadConfigText('service: {id: shop}\nupstream: {url: "http://127.0.0.1:8081"}\nredis: {url: "redis://127.0.0.1:6379"}\n', '/x/outrigger.yaml');

const facts = (loaded: Record<string, number>): StartFacts => ({
  config,
  url: 'http://127.0.0.1:8080',
  redis: 'redis://127.0.0.1:6379',
  redisReady: true,
  features: { 'api-keys': 'enabled', webhooks: 'disabled' },
  loaded,
  worker: false,
  routes: ['/_health'],
});

describe('the start summary line', () => {
  it('says in one sentence where it listens, what it fronts, Redis, the features and what was loaded', () => {
    const { message, fields } = startSummary(facts({ permissions: 6, apps: 1, webhooks: 0 }));
    expect(message).toBe(
      'Outrigger listening on http://127.0.0.1:8080, proxying to http://127.0.0.1:8081; Redis redis://127.0.0.1:6379 ready; ' +
        'acl ' +
        config.acl.mode +
        ', identity ' +
        config.upstream.identity.mode +
        '; features: api-keys enabled, webhooks disabled; ' +
        'loaded: 6 permissions, 1 app, 0 webhooks; webhook worker off',
    );
    expect(fields).toMatchObject({ service: 'shop', loaded: { permissions: 6, apps: 1, webhooks: 0 }, worker: 'off' });
  });

  it('counts one of each in the singular', () => {
    expect(startSummary(facts({ permissions: 1, apps: 1, webhooks: 1 })).message).toContain('loaded: 1 permission, 1 app, 1 webhook;');
  });
});
