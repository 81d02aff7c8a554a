/**
 * A backend write a GraphQL mutation made carries `via: graphql` and `graphql: {app, operation}`
 * through the stream (SPEC §6.4, issue 27 item 3), into templates and the log's Incoming Request;
 * every other event has neither, and an entry written without them decodes as before.
 */
import { describe, expect, it } from 'vitest';
import type { CapturedEvent } from '../../../src/webhooks/event.js';
import { incomingRequestSection, incomingRequestText } from '../../../src/webhooks/log-entry.js';
import { decodeStreamRecord, encodeCapturedEvent, META_FIELD } from '../../../src/webhooks/stream-record.js';
import { buildTemplateView } from '../../../src/webhooks/template/view.js';

const event = (origin: boolean): CapturedEvent => ({
  id: 'evt_1',
  timestamp: 1_700_000_000_000,
  serviceId: 'svc',
  request: {
    method: 'POST',
    path: '/shop/orders',
    query: {},
    headers: { 'content-type': 'application/json' },
    body: { number: 1 },
    bodyTruncated: false,
    ...(origin ? { via: 'graphql' as const, graphql: { app: 'shop', operation: 'NewOrder' } } : {}),
  },
  response: { statusCode: 201, headers: { location: '/shop/orders/x' }, body: null, bodyTruncated: false },
});

describe('via and graphql on a mutation write event', () => {
  it('travel through a stream entry and back', () => {
    const decoded = decodeStreamRecord(encodeCapturedEvent(event(true), ['h1'], []));
    expect(decoded?.event.request).toMatchObject({ via: 'graphql', graphql: { app: 'shop', operation: 'NewOrder' } });
    const plain = decodeStreamRecord(encodeCapturedEvent(event(false), ['h1'], []));
    expect(plain?.event.request.via).toBeUndefined();
    expect(plain?.event.request.graphql).toBeUndefined();
  });

  it('an entry written by an older proxy (no vi/gq) decodes unchanged; an operation of null stays null', () => {
    const [field, meta] = encodeCapturedEvent(event(true), ['h1'], []) as [string, string];
    const parsed = JSON.parse(meta);
    expect(parsed).toMatchObject({ vi: 'graphql', gq: { a: 'shop', o: 'NewOrder' } });
    delete parsed.vi;
    delete parsed.gq;
    expect(decodeStreamRecord([field, JSON.stringify(parsed)])?.event.request).not.toHaveProperty('via');
    const anonymous = decodeStreamRecord([META_FIELD, JSON.stringify({ ...parsed, vi: 'graphql', gq: { a: 'shop', o: null } })]);
    expect(anonymous?.event.request.graphql).toEqual({ app: 'shop', operation: null });
  });

  it('show in templates and in the Incoming Request section (and its stored text), not on other events', () => {
    expect(buildTemplateView(event(true)).request).toMatchObject({ via: 'graphql', graphql: { app: 'shop', operation: 'NewOrder' } });
    expect(buildTemplateView(event(false)).request).not.toHaveProperty('via');
    const section = incomingRequestSection(event(true));
    expect(section).toMatchObject({ via: 'graphql', graphql: { app: 'shop', operation: 'NewOrder' } });
    expect(JSON.parse(incomingRequestText(section))).toMatchObject({ via: 'graphql', body: { number: 1 } });
    expect(incomingRequestSection(event(false))).not.toHaveProperty('graphql');
  });
});
