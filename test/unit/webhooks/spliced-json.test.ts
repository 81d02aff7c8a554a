import { describe, expect, it } from 'vitest';
import { buildDefaultPayload, defaultPayloadParts, payloadText, serializeDefaultPayload } from '../../../src/webhooks/default-payload.js';
import type { CapturedEvent } from '../../../src/webhooks/event.js';
import { incomingRequestSection, skippedLogEntry, type WebhookLogEntry } from '../../../src/webhooks/log-entry.js';
import { notePayloadParts, parseStoredLogEntry, serializeLogEntry } from '../../../src/webhooks/stored-log-entry.js';

/** The payload and the log entry splice the per-event request JSON in; the bytes must be JSON.stringify's exactly. */
describe('webhooks: JSON built with the per-event request section', () => {
  // Strings that contain the splice slots' text: inside JSON strings their quotes are escaped, so they never match.
  const tricky = '"detail":{"incomingRequest":0, ,"request":0,"response": \u2028 </script> \\ "quoted"';
  const event: CapturedEvent = {
    id: 'evt_1',
    timestamp: 1_700_000_000_000,
    serviceId: 'svc',
    request: { method: 'POST', path: '/a', query: { q: [tricky, 'x'] }, headers: { 'x-note': tricky }, body: { text: tricky, n: [1, 2, { deep: null }] }, bodyTruncated: true },
    response: { statusCode: 201, headers: { 'content-type': 'application/json' }, body: { ok: tricky }, bodyTruncated: false },
  };

  it('the default payload equals JSON.stringify of its object', () => {
    const ref = { id: 'hook', name: tricky };
    expect(serializeDefaultPayload(event, ref)).toBe(JSON.stringify(buildDefaultPayload(event, ref)));
    expect(JSON.parse(serializeDefaultPayload(event, ref)).request.body.text).toBe(tricky);
  });

  it('a log entry equals JSON.stringify of the entry, with and without later sections', () => {
    const skipped = skippedLogEntry(event, { _id: 'hook', type: 'http', url: 'http://x/' }, tricky);
    expect(serializeLogEntry(skipped)).toBe(JSON.stringify(skipped));
    const delivered: WebhookLogEntry = {
      ...skipped,
      status: 'failed',
      attempt: 2,
      nextAttemptAt: { $date: 5 },
      summary: { ...skipped.summary, error: tricky },
      detail: {
        incomingRequest: incomingRequestSection(event),
        condition: { matched: true, reason: tricky },
        outgoingRequest: { method: 'POST', url: 'http://x/', headers: { a: tricky }, body: tricky },
        response: { statusCode: 500, headers: {}, body: tricky },
        error: tricky,
      },
    };
    expect(serializeLogEntry(delivered)).toBe(JSON.stringify(delivered));
    // The section object is shared per event, so its JSON is built once.
    expect(incomingRequestSection(event)).toBe(delivered.detail.incomingRequest);
  });

  it('a delivery with the default payload is stored without the request a second time, and read back exactly', () => {
    // Text that JSON escapes, keys V8 reorders, numbers JSON.stringify shortens, a lone surrogate.
    const odd = { ...event, response: { ...event.response, body: { b: 1, 2: 'two', '1': [1e21, 0.1, -0, 5e-7], s: '\ud800 \u0000 \u2028 "x"', __proto__: null } } } as CapturedEvent;
    Object.defineProperty(odd.response.body, '__proto__', { value: { own: tricky }, enumerable: true });
    const parts = defaultPayloadParts(odd, { id: 'hook', name: tricky });
    const body = payloadText(parts);
    expect(body).toBe(JSON.stringify(buildDefaultPayload(odd, { id: 'hook', name: tricky })));
    const outgoingRequest = { method: 'POST', url: 'http://x/', headers: { 'webhook-signature': '[redacted]' }, body };
    notePayloadParts(outgoingRequest, parts);
    const entry: WebhookLogEntry = {
      ...skippedLogEntry(odd, { _id: 'hook', type: 'http', url: 'http://x/' }, tricky),
      status: 'success',
      attempt: 1,
      detail: {
        incomingRequest: incomingRequestSection(odd),
        condition: { matched: true, reason: tricky },
        outgoingRequest,
        response: { statusCode: 200, headers: {}, body: { payload: 0 } },
      },
    };
    entry.nextAttemptAt = { $date: 7 }; // set after the entry was built, as the worker does: it follows `detail`
    const stored = serializeLogEntry(entry);
    const plain = JSON.stringify(entry);
    expect(stored.length).toBeLessThan(plain.length - JSON.stringify(incomingRequestSection(odd)).length);
    expect(stored).not.toContain('"body":"{');
    const read = parseStoredLogEntry(stored);
    expect(read.detail.outgoingRequest!.body).toBe(body);
    expect(JSON.stringify(read)).toBe(plain);
    // An entry stored whole (before this form, or a body that is not the payload) reads as it was.
    expect(JSON.stringify(parseStoredLogEntry(plain))).toBe(plain);
    const replaced = { ...entry, detail: { ...entry.detail, outgoingRequest: { ...outgoingRequest, body: 'other' } } };
    expect(serializeLogEntry(replaced)).toBe(JSON.stringify(replaced));
  });
});
