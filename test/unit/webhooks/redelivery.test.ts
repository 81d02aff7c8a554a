import { describe, expect, it } from 'vitest';
import { serializeDefaultPayload } from '../../../src/webhooks/deliver/attempt/default-payload.js';
import type { CapturedEvent } from '../../../src/webhooks/event.js';
import { incomingRequestSection, type WebhookLogEntry } from '../../../src/webhooks/log-entry.js';
import { eventFromLogEntry } from '../../../src/webhooks/routes/redelivery.js';
import { buildTemplateView } from '../../../src/webhooks/template/index.js';

const event: CapturedEvent = {
  id: 'evt_1',
  timestamp: Date.UTC(2026, 0, 2, 3, 4, 5),
  serviceId: 'svc',
  request: { method: 'POST', path: '/shop/orders', query: { a: ['1', '2'] }, headers: { 'content-type': 'application/json' }, body: { item: 'oar' }, bodyTruncated: false },
  response: { statusCode: 201, headers: { location: '/shop/orders/1' }, body: { _id: '1' }, bodyTruncated: true },
};

function entry(detail: Partial<WebhookLogEntry['detail']>, status: WebhookLogEntry['status'] = 'failed'): WebhookLogEntry {
  return {
    _id: 'x-1',
    webhookId: 'w',
    eventId: event.id,
    timestamp: { $date: event.timestamp + 50 },
    status,
    attempt: 1,
    durationMs: 3,
    summary: { method: 'POST', path: '/shop/orders', target: 'http://t', statusCode: 500, error: 'the target answered 500' },
    detail: { incomingRequest: incomingRequestSection(event), condition: { matched: true, reason: 'r' }, ...detail },
  };
}

describe('eventFromLogEntry: the event behind a log entry (resend and recover)', () => {
  it('rebuilds the event from the default payload an HTTP webhook sent', () => {
    const body = serializeDefaultPayload(event, { id: 'w', name: 'W' });
    const rebuilt = eventFromLogEntry(entry({ outgoingRequest: { method: 'POST', url: 'http://t', headers: {}, body } }));
    expect(rebuilt).toEqual(event);
    // Sending it again produces the very same bytes.
    expect(serializeDefaultPayload(rebuilt!, { id: 'w', name: 'W' })).toBe(body);
  });

  it('rebuilds it from the template input of a transform or an email, even when rendering failed', () => {
    const view = JSON.parse(JSON.stringify(buildTemplateView(event, { id: 'w', name: 'W' })));
    const rebuilt = eventFromLogEntry(entry({ transformation: { input: view, output: null, error: 'not JSON' } }));
    expect(rebuilt).toMatchObject({ id: 'evt_1', timestamp: event.timestamp, serviceId: 'svc', request: event.request });
    expect(rebuilt!.response).toEqual({ statusCode: 201, headers: { location: '/shop/orders/1' }, body: { _id: '1' }, bodyTruncated: true });
    const email = eventFromLogEntry(
      entry({ transformation: { input: view, output: { subject: 's', body: 'b' }, error: null }, outgoingRequest: { method: 'SMTP', url: 'smtp://h:25', headers: {}, body: 'b' } }),
    );
    expect(email!.response.statusCode).toBe(201);
  });

  it('gives null when the entry holds no response (an attempt that failed before building a body)', () => {
    expect(eventFromLogEntry(entry({ error: 'internal error: x' }))).toBeNull();
    expect(eventFromLogEntry(entry({ outgoingRequest: { method: 'POST', url: 'http://t', headers: {}, body: 'not json' } }))).toBeNull();
  });
});
