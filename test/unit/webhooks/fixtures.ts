import type { CapturedEvent } from '../../../src/webhooks/event.js';

/** A captured POST /orders event used across the webhook unit tests. */
export function sampleEvent(overrides: Partial<CapturedEvent> = {}): CapturedEvent {
  return {
    id: '1700000000000-0',
    timestamp: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
    serviceId: 'demo',
    request: {
      method: 'POST',
      path: '/shop/orders',
      query: { dryRun: 'false', tag: ['a', 'b'] },
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-1', authorization: '[redacted]' },
      body: {
        customer: { name: 'O\'Brien "Bob"', email: 'bob@example.com' },
        note: 'line1\nline2\t<b>&</b> C:\\temp https://x.example/a?b=1&c=2',
        total: 42.5,
        paid: false,
        items: [
          { sku: 'A-1', qty: 2 },
          { sku: 'B-2', qty: 1 },
        ],
        nothing: null,
      },
      bodyTruncated: false,
    },
    response: {
      statusCode: 201,
      headers: { 'content-type': 'application/json', location: '/shop/orders/99', 'set-cookie': ['a=1', 'b=2'] },
      body: { _id: 99, status: 'created' },
      bodyTruncated: false,
    },
    ...overrides,
  };
}
