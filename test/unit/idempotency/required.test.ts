import { describe, expect, it } from 'vitest';
import { exchangeFromParts } from '../../../src/condition/index.js';
import { OutriggerError } from '../../../src/errors.js';
import { keyRequiredRefusal, keyRequiredWhere } from '../../../src/idempotency/required.js';

describe('idempotency.required (keyRequiredWhere)', () => {
  it('asks nothing when no condition is set', () => {
    expect(keyRequiredWhere([])).toBeUndefined();
  });

  it('matches where any condition matches the head, and nowhere else', () => {
    const required = keyRequiredWhere(['path-prefix(/shop/orders)', "path-prefix(/graphql/shop) and equals(%{i,X-Agent}, 'yes')"])!;
    expect(required(exchangeFromParts({ method: 'POST', path: '/shop/orders/1' }))).toBe(true);
    expect(required(exchangeFromParts({ method: 'POST', path: '/graphql/shop', headers: { 'x-agent': 'yes' } }))).toBe(true);
    expect(required(exchangeFromParts({ method: 'POST', path: '/graphql/shop' }))).toBe(false);
    expect(required(exchangeFromParts({ method: 'POST', path: '/shop/products' }))).toBe(false);
  });

  it('refuses with 400 IDEMPOTENCY_KEY_REQUIRED naming the header, the setting and what the door runs', () => {
    const refusal = keyRequiredRefusal('mutation');
    expect(refusal).toBeInstanceOf(OutriggerError);
    expect(refusal.status).toBe(400);
    expect(refusal.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(refusal.message).toMatch(/^this mutation must carry an Idempotency-Key header \(idempotency\.required\)/);
  });
});
