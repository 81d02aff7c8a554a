import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { buildStandardWebhookHeaders, deliveryMessageId, generateWebhookSecret, signPayload, webhookSecretProblem } from '../../../src/webhooks/signature.js';

describe('Standard Webhooks signing', () => {
  it('matches the known-answer vector of the spec', () => {
    expect(
      signPayload({
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        timestamp: 1614265330,
        body: '{"test": 2432232314}',
      }),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('generates whsec_ secrets of 32 random bytes, all different', () => {
    const a = generateWebhookSecret();
    const b = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(a).not.toBe(b);
    expect(webhookSecretProblem(a)).toBeNull();
    expect(Buffer.from(generateWebhookSecret(1).slice(6), 'base64')).toHaveLength(24);
  });

  it('produces headers that the standardwebhooks library verifies', () => {
    const secret = generateWebhookSecret();
    const body = JSON.stringify({ hello: 'wörld', n: 1, s: 'quote " and \\ and \n' });
    const headers = buildStandardWebhookHeaders({ secret, msgId: deliveryMessageId('1700000000000-0', 'wh1'), body });
    expect(Object.keys(headers)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    const verified = new Webhook(secret).verify(body, { ...headers });
    expect(verified).toEqual(JSON.parse(body));
  });

  it('signs bytes the same as the equivalent string', () => {
    const secret = generateWebhookSecret();
    const body = '{"a":"é"}';
    const s1 = signPayload({ secret, msgId: 'msg_1', timestamp: 1, body });
    const s2 = signPayload({ secret, msgId: 'msg_1', timestamp: 1, body: Buffer.from(body, 'utf8') });
    expect(s1).toBe(s2);
  });

  it('the library rejects a tampered body, a wrong secret and a changed id', () => {
    const secret = generateWebhookSecret();
    const body = '{"amount":10}';
    const headers = { ...buildStandardWebhookHeaders({ secret, msgId: 'msg_abc', body }) };
    expect(() => new Webhook(secret).verify('{"amount":1000}', headers)).toThrow(/No matching signature/);
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow(/No matching signature/);
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_other' })).toThrow(/No matching signature/);
  });

  it('uses the given timestamp; the library refuses one outside its tolerance', () => {
    const secret = generateWebhookSecret();
    const headers = { ...buildStandardWebhookHeaders({ secret, msgId: 'msg_old', body: '{}', timestamp: 1614265330 }) };
    expect(headers['webhook-timestamp']).toBe('1614265330');
    expect(() => new Webhook(secret).verify('{}', headers)).toThrow(/too old/);
  });

  it('refuses ids with "." and bad timestamps', () => {
    const secret = generateWebhookSecret();
    expect(() => signPayload({ secret, msgId: 'a.b', timestamp: 1, body: '' })).toThrow(/without "\."/);
    expect(() => signPayload({ secret, msgId: 'a', timestamp: 1.5, body: '' })).toThrow(/integer/);
  });

  it('explains unusable secrets', () => {
    expect(webhookSecretProblem(42)).toMatch(/must be a string/);
    expect(webhookSecretProblem('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toMatch(/must start with whsec_/);
    expect(webhookSecretProblem('whsec_not base64!')).toMatch(/base64/);
    expect(webhookSecretProblem('whsec_' + Buffer.alloc(8).toString('base64'))).toMatch(/24 to 64 random bytes \(this one has 8\)/);
    expect(() => signPayload({ secret: 'nope', msgId: 'm', timestamp: 1, body: '' })).toThrow(/must start with whsec_/);
  });

  it('derives a stable webhook-id per (event, webhook)', () => {
    const a = deliveryMessageId('evt-1', 'wh-1');
    expect(a).toBe(deliveryMessageId('evt-1', 'wh-1'));
    expect(a).not.toBe(deliveryMessageId('evt-1', 'wh-2'));
    expect(a).not.toBe(deliveryMessageId('evt-2', 'wh-1'));
    // NUL separation: ("ab","c") and ("a","bc") differ.
    expect(deliveryMessageId('ab', 'c')).not.toBe(deliveryMessageId('a', 'bc'));
    expect(a).toMatch(/^msg_[A-Za-z0-9_-]{32}$/);
    // Pinned: a retry after an upgrade must carry the webhook-id its first attempt had (receivers deduplicate on it).
    expect(a).toBe('msg_OfGNV_3GN9quSPHnrGRA0r6NZwEE7Xtn');
  });
});
