import { describe, expect, it } from 'vitest';
import { buildDefaultPayload, defaultPayloadParts, payloadText, serializeDefaultPayload } from '../../../src/webhooks/deliver/attempt/default-payload.js';
import { bodyJsonText, type CapturedEvent } from '../../../src/webhooks/event.js';
import { decodeStreamRecord, encodeEntry } from '../../../src/webhooks/stream-record.js';
import { incomingRequestSection, skippedLogEntry, type WebhookLogEntry } from '../../../src/webhooks/log-entry.js';
import { notePayloadParts, parseStoredLogEntry, serializeLogEntry, serializeLogEntryBytes } from '../../../src/webhooks/logs/stored-log-entry.js';

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
    expect(serializeLogEntryBytes(delivered).equals(Buffer.from(JSON.stringify(delivered)))).toBe(true);
    expect(serializeLogEntryBytes(skipped).equals(Buffer.from(JSON.stringify(skipped)))).toBe(true);
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
    expect(serializeLogEntryBytes(entry).toString('utf8')).toBe(stored);
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

  describe('bodies that reach the worker as JSON text', () => {
    /** A version 3 stream entry as the proxy writes it, with these bodies (JSON) travelling raw. */
    function decoded(requestBody: string, responseBody: string): CapturedEvent {
      const meta = {
        v: 3,
        id: 'evt_2',
        t: 1_700_000_000_000,
        s: 'svc',
        m: 'POST',
        p: '/orders',
        q: 'a=1',
        qh: { 'x-note': tricky },
        qb: { n: Buffer.byteLength(requestBody), ct: 'application/json', k: Buffer.byteLength(requestBody) },
        sc: 201,
        rh: { 'content-type': 'application/json; charset=utf-8' },
        rb: { n: Buffer.byteLength(responseBody), ct: 'application/json', k: Buffer.byteLength(responseBody) },
        ma: ['hook'],
      };
      return decodeStreamRecord(['e', encodeEntry(JSON.stringify(meta), [Buffer.from(requestBody), Buffer.from(responseBody)])])!.event;
    }
    /** The same event with its bodies parsed up front: what every byte must equal. */
    const eager = (event: CapturedEvent): CapturedEvent => ({
      ...event,
      request: { ...event.request, body: structuredClone(event.request.body) },
      response: { ...event.response, body: structuredClone(event.response.body) },
    });
    const ref = { id: 'hook', name: 'n' };

    it('a canonical body is embedded as its text, unparsed, and the bytes are those of the parsed value', () => {
      const requestBody = JSON.stringify({ order: 7, items: [{ sku: 'a', qty: 2, price: 9.95 }], note: tricky });
      const responseBody = JSON.stringify({ _id: { $oid: '65f0c0ffee0000000000beef' }, ok: true, big: 1e21 });
      const event = decoded(requestBody, responseBody);
      expect(bodyJsonText(event.request)).toBe(requestBody);
      expect(bodyJsonText(event.response)).toBe(responseBody);
      const payload = serializeDefaultPayload(event, ref);
      const entry = skippedLogEntry(event, { _id: 'hook', type: 'http', url: 'http://x/' }, tricky);
      const stored = serializeLogEntry(entry);
      // Nothing above read a body: both are still text.
      expect(bodyJsonText(event.request)).toBe(requestBody);
      expect(bodyJsonText(event.response)).toBe(responseBody);
      expect(payload).toBe(JSON.stringify(buildDefaultPayload(eager(event), ref)));
      expect(stored).toBe(JSON.stringify(entry));
      expect(JSON.parse(payload).request.body.items[0].price).toBe(9.95);
      // A delivery's entry stores the payload without the request and reads back the exact bytes sent.
      const parts = defaultPayloadParts(event, ref);
      const outgoingRequest = { method: 'POST', url: 'http://x/', headers: {}, body: payloadText(parts) };
      notePayloadParts(outgoingRequest, parts);
      const delivered: WebhookLogEntry = { ...entry, status: 'success', attempt: 1, detail: { ...entry.detail, outgoingRequest } };
      const bytes = serializeLogEntryBytes(delivered);
      expect(bytes.length).toBeLessThan(Buffer.byteLength(JSON.stringify(delivered)));
      expect(parseStoredLogEntry(bytes.toString('utf8')).detail.outgoingRequest!.body).toBe(payload);
    });

    it('reading a body parses it once; changing it drops the text, so a payload never shows the old one', () => {
      const event = decoded('{"a":1}', '{"b":[1,2]}');
      expect(event.response.body).toEqual({ b: [1, 2] });
      expect(bodyJsonText(event.response)).toBeUndefined();
      expect(event.response.body).toBe(event.response.body);
      (event.request as { body: unknown }).body = { replaced: true };
      expect(bodyJsonText(event.request)).toBeUndefined();
      expect(serializeDefaultPayload(event, ref)).toBe(JSON.stringify(buildDefaultPayload(event, ref)));
      expect(JSON.parse(serializeDefaultPayload(event, ref)).request.body).toEqual({ replaced: true });
      // The members keep their order (JSON.stringify follows it).
      expect(Object.keys(event.request)).toEqual(['method', 'path', 'query', 'headers', 'body', 'bodyTruncated']);
    });

    it("a body in another spelling is parsed as before, and serialized in JSON.stringify's", () => {
      for (const odd of ['{ "a": 1 }', '{"a":1.0}', '{"a":1,"a":2}', '{"s":"\\u0041"}']) {
        const event = decoded(odd, odd);
        expect(bodyJsonText(event.request)).toBeUndefined();
        expect(JSON.parse(serializeDefaultPayload(event, ref)).response.body).toEqual(JSON.parse(odd));
        expect(serializeDefaultPayload(event, ref)).toBe(JSON.stringify(buildDefaultPayload(event, ref)));
      }
    });
  });
});
