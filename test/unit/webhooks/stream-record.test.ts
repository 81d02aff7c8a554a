import { describe, expect, it } from 'vitest';
import { isUtf8 } from 'node:buffer';
import type { OutgoingHttpHeaders } from 'node:http';
import { exchangeFromParts, parseCondition } from '../../../src/condition/index.js';
import type { RequestScope } from '../../../src/http/scope.js';
import type { EventProducer, QueuedEvent } from '../../../src/webhooks/capture/event-producer.js';
import { captureBody, queryObject, type CapturedEvent } from '../../../src/webhooks/event.js';
import { WebhookObserver, type CompiledWebhook } from '../../../src/webhooks/capture/observer.js';
import { createHeaderRedactor, removeIssuedKey } from '../../../src/webhooks/capture/redaction.js';
import {
  decodeStreamEntry,
  decodeStreamRecord,
  encodeCapturedEvent,
  encodeEntry,
  encodeStreamRecord,
  isNewerEntry,
  packEntries,
  STREAM_VERSION,
  type RecordedRequest,
  type StreamFields,
} from '../../../src/webhooks/stream-record.js';
import { sampleEvent } from './fixtures.js';

const CAP = 16;

interface Exchange {
  method?: string;
  path?: string;
  query?: string;
  headers?: Record<string, string | string[]>;
  requestChunks?: Buffer[];
  status?: number;
  responseHeaders?: OutgoingHttpHeaders;
  responseChunks?: Buffer[];
  routeKind?: string;
}

function harness(options: { recording?: boolean; webhooks?: CompiledWebhook[]; secretHeaders?: string[] } = {}) {
  const offered: QueuedEvent[] = [];
  const webhooks = options.webhooks ?? [{ id: 'w1', name: 'W1', enabled: true, condition: parseCondition('true') }];
  const observer = new WebhookObserver({
    serviceId: 'svc',
    captureBytes: CAP,
    secretHeaders: options.secretHeaders ?? ['X-Api-Secret'],
    keysPath: '/keys',
    webhooksEnabled: () => true,
    webhooks: () => ({ all: webhooks, enabled: webhooks.filter((w) => w.enabled) }),
    recordingActive: () => options.recording ?? false,
    exchangeFor: (scope) => exchangeFromParts({ method: scope.method, path: scope.path, query: scope.rawQuery }),
    producer: { offer: (item: QueuedEvent) => offered.push(item) > 0 } as unknown as EventProducer,
  });
  const run = (x: Exchange) => {
    const headers = x.headers ?? {};
    const responseHeaders = x.responseHeaders ?? {};
    const scope = {
      method: x.method ?? 'POST',
      path: x.path ?? '/shop/orders',
      rawQuery: x.query ?? '',
      routeKind: x.routeKind ?? 'proxy',
      req: { headers },
      res: { statusCode: x.status ?? 200, getHeaders: () => responseHeaders },
    } as unknown as RequestScope;
    const observed = observer.begin()!;
    for (const chunk of x.requestChunks ?? []) observed.onRequestData(chunk);
    observed.onResponseHead(x.status ?? 200, responseHeaders);
    for (const chunk of x.responseChunks ?? []) observed.onResponseData(chunk);
    observed.finish(scope, true);
    return offered.pop();
  };
  return { observer, run };
}

/** What the proxy captured before stream entries carried raw bodies (the old `capture`), for comparison. */
function expectedEvent(x: Exchange, secretHeaders: string[] = ['X-Api-Secret']): Omit<CapturedEvent, 'id' | 'timestamp'> {
  const redact = createHeaderRedactor(['auth-token', ...secretHeaders]);
  const bytes = (chunks: Buffer[] = []) => Buffer.concat(chunks);
  const total = (chunks: Buffer[] = []) => chunks.reduce((n, c) => n + c.length, 0);
  const first = (v: unknown) => (v === undefined ? undefined : Array.isArray(v) ? String(v[0]) : String(v));
  const headers = x.headers ?? {};
  const responseHeaders = x.responseHeaders ?? {};
  const request = captureBody(bytes(x.requestChunks), {
    contentType: first(headers['content-type']),
    contentEncoding: first(headers['content-encoding']),
    limit: CAP,
    totalBytes: total(x.requestChunks),
  });
  const response = captureBody(bytes(x.responseChunks), {
    contentType: first(responseHeaders['content-type']),
    contentEncoding: first(responseHeaders['content-encoding']),
    limit: CAP,
    totalBytes: total(x.responseChunks),
  });
  if (x.routeKind === 'oauth') {
    if (request.body !== null) request.body = '[redacted]';
    if (response.body !== null) response.body = '[redacted]';
  } else if ((x.method ?? 'POST') === 'POST' && x.path === '/keys') response.body = removeIssuedKey(response.body);
  return {
    serviceId: 'svc',
    request: { method: x.method ?? 'POST', path: x.path ?? '/shop/orders', query: queryObject(x.query ?? ''), headers: redact(headers), body: request.body, bodyTruncated: request.truncated },
    response: { statusCode: x.status ?? 200, headers: redact(responseHeaders as Record<string, string>), body: response.body, bodyTruncated: response.truncated },
  };
}

/** Stream fields as the worker reads them (bytes), and as a plain XRANGE answers them (strings). */
const asBuffers = (fields: StreamFields) => fields.map((f) => (typeof f === 'string' ? Buffer.from(f) : f));
const asStrings = (fields: StreamFields) => fields.map((f) => String(f));

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

const CASES: Array<[string, Exchange]> = [
  [
    'JSON bodies in several chunks, a query, secret headers',
    {
      query: 'a=1&b=x%20y&a=2',
      headers: { 'content-type': 'application/json', authorization: 'Bearer rig_secret', cookie: 'c=cookie-secret', 'x-api-secret': 'header-secret', 'x-other': 'ok' },
      requestChunks: [Buffer.from('{"i":'), Buffer.from('7}')],
      status: 201,
      responseHeaders: { 'Content-Type': 'application/json; charset=utf-8', 'content-length': 9, 'set-cookie': ['s=setcookie-secret', 't=2'], 'auth-token': 'backend-token-secret', location: '/x' },
      responseChunks: [json({ ok: 1 })],
    },
  ],
  ['JSON that does not parse stays text', { headers: { 'content-type': 'application/json' }, requestChunks: [Buffer.from('{bad')] }],
  ['a body cut at the cap, mid-character', { headers: { 'content-type': 'application/json' }, requestChunks: [Buffer.from('{"a":"ééééééééééé"}')] }],
  ['a text body cut at the cap', { headers: { 'content-type': 'text/plain' }, responseChunks: [Buffer.from('0123456789'), Buffer.from('abcdefghij')] }],
  ['binary', { headers: { 'content-type': 'image/png' }, requestChunks: [Buffer.from([0xff, 0xfe, 0x00, 0x01])] }],
  ['a byte order mark', { headers: { 'content-type': 'text/plain' }, requestChunks: [Buffer.from([0xef, 0xbb, 0xbf, 0x41])] }],
  ['compressed', { responseHeaders: { 'content-encoding': 'gzip', 'content-type': 'application/json' }, responseChunks: [Buffer.from([0x1f, 0x8b, 0x08])] }],
  ['identity encoding', { headers: { 'content-type': 'application/json', 'content-encoding': 'identity' }, requestChunks: [json({ z: 1 })] }],
  ['no bodies', { method: 'GET', status: 204 }],
  ['an issued key', { path: '/keys', status: 201, responseHeaders: { 'content-type': 'application/json' }, responseChunks: [json({ _id: 'k', key: 'rig_x' })] }],
  ['an issued key in a cut answer', { path: '/keys', status: 201, responseHeaders: { 'content-type': 'application/json' }, responseChunks: [json({ _id: 'k', key: 'rig_abcdefghijklmnop' })] }],
  ['OAuth bodies', { path: '/token', routeKind: 'oauth', requestChunks: [Buffer.from('password=p')], responseChunks: [json({ access_token: 'rig_y' })] }],
];

describe('stream entries (version 3): the proxy writes bytes, the worker captures them', () => {
  for (const [name, exchange] of CASES) {
    it(`gives the worker the event the proxy used to capture: ${name}`, () => {
      const { run } = harness();
      const item = run(exchange)!;
      expect(item.recorded).toBeUndefined();
      // A plain XRANGE answers strings: equivalent only when the bodies are valid UTF-8 (the worker reads bytes).
      const utf8 = item.stream!.every((f) => typeof f === 'string' || isUtf8(f));
      for (const fields of utf8 ? [asBuffers(item.stream!), asStrings(item.stream!)] : [asBuffers(item.stream!)]) {
        const record = decodeStreamRecord(fields)!;
        expect(record).not.toBeNull();
        expect(record.event).toMatchObject(expectedEvent(exchange));
        expect(record.event.id).toMatch(/^evt_/);
        expect(record.matched).toEqual([{ id: 'w1', reason: `the condition matched ${exchange.method ?? 'POST'} ${exchange.path ?? '/shop/orders'} (response ${exchange.status ?? 200})` }]);
        expect(record.skipped).toEqual([]);
      }
    });
  }

  it('writes no secret to Redis: headers redacted, issued keys and OAuth bodies taken out', () => {
    const { run } = harness();
    for (const [, exchange] of CASES) {
      const text = asBuffers(run(exchange)!.stream!)
        .map((f) => f.toString('latin1'))
        .join('\n');
      for (const secret of ['rig_secret', 'cookie-secret', 'header-secret', 'backend-token-secret', 'rig_x', 'rig_abc', 'password=p', 'rig_y']) expect(text).not.toContain(secret);
    }
  });

  it('keeps a secret Content-Type out of Redis (the body is captured in the proxy then)', () => {
    const { run } = harness({ secretHeaders: ['Content-Type'] });
    const text: Exchange = { headers: { 'content-type': 'text/x-secret-type' }, requestChunks: [Buffer.from('hello')] };
    const fields = run(text)!.stream!;
    expect(
      asBuffers(fields)
        .map((f) => f.toString('latin1'))
        .join('\n'),
    ).not.toContain('x-secret-type');
    expect(decodeStreamRecord(fields)!.event).toMatchObject(expectedEvent(text, ['Content-Type']));
    // As before, a binary placeholder names the type (the header itself is redacted).
    const binary: Exchange = { headers: { 'content-type': 'application/x-secret-type' }, requestChunks: [Buffer.from([0xff, 0x00])] };
    expect(decodeStreamRecord(run(binary)!.stream!)!.event).toMatchObject(expectedEvent(binary, ['Content-Type']));
  });

  it('copies the captured bytes: a socket buffer reused later does not change a queued event', () => {
    const chunk = Buffer.from('{"n":1}');
    const { run } = harness();
    const item = run({ headers: { 'content-type': 'application/json' }, requestChunks: [chunk] })!;
    chunk.write('{"n":2}');
    expect(decodeStreamRecord(item.stream!)!.event.request.body).toEqual({ n: 1 });
  });

  it('carries due skipped entries with their reasons, and nothing when nothing is due', () => {
    const webhooks: CompiledWebhook[] = [
      { id: 'no', name: 'No', enabled: true, condition: parseCondition('false') },
      { id: 'broken', name: 'Broken', enabled: true, condition: null, conditionError: 'bad syntax' },
    ];
    const { run } = harness({ webhooks });
    const record = decodeStreamRecord(run({ method: 'GET', status: 404 })!.stream!)!;
    expect(record.matched).toEqual([]);
    expect(record.skipped).toEqual([
      { id: 'no', reason: 'the condition did not match GET /shop/orders (response 404)', always: false },
      { id: 'broken', reason: 'the stored condition cannot be evaluated: bad syntax', always: false },
    ]);
    expect(run({ method: 'GET' })).toBeUndefined(); // within 10 s: not due again
    // A changed list keeps what was logged when; a webhook new to it is due at once.
    webhooks.unshift({ id: 'new', name: 'New', enabled: true, condition: parseCondition('false') });
    expect(decodeStreamRecord(run({ method: 'GET', status: 404 })!.stream!)!.skipped.map((s) => s.id)).toEqual(['new']);
    expect(run({ method: 'GET' })).toBeUndefined();
  });

  it('while recording, queues the recorded request and the same event', () => {
    const exchange: Exchange = { query: 'x=1', headers: { 'content-type': 'application/json', cookie: 'c=1' }, requestChunks: [json({ a: 1 })], status: 201 };
    const { run } = harness({ recording: true });
    const item = run(exchange)!;
    const record = decodeStreamRecord(item.stream!)!;
    expect(record.event).toMatchObject(expectedEvent(exchange));
    const recorded = JSON.parse(item.recorded!) as RecordedRequest;
    expect(recorded).toMatchObject({ eventId: record.event.id, method: 'POST', query: { x: '1' }, headers: { cookie: '[redacted]' }, body: { a: 1 }, completed: true });
    expect(recorded.webhooks).toEqual([{ id: 'w1', name: 'W1', enabled: true, matched: true }]);
  });

  it('round-trips a fully captured event, and still reads version 1 entries', () => {
    const event = sampleEvent();
    const skipped = [{ id: 's', reason: 'no match', always: true }];
    const v2 = decodeStreamRecord(encodeCapturedEvent(event, ['w'], skipped))!;
    expect(v2.event).toEqual(event);
    expect(v2.matched).toEqual([{ id: 'w', reason: 'the condition matched POST /shop/orders (response 201)' }]);
    expect(v2.skipped).toEqual(skipped);
    const truncated = sampleEvent({ request: { ...event.request, body: 'partial', bodyTruncated: true } });
    expect(decodeStreamRecord(encodeCapturedEvent(truncated, [], []))!.event).toEqual(truncated);
    const v1 = { v: 1 as const, event, matched: [{ id: 'w', reason: 'r' }], skipped: [] };
    expect(decodeStreamRecord([Buffer.from('d'), Buffer.from(encodeStreamRecord(v1))])).toEqual(v1);
    expect(decodeStreamRecord(['m', '{"v":3}'])).toBeNull();
    expect(decodeStreamRecord(['m', 'not json'])).toBeNull();
    expect(decodeStreamRecord(['q', 'body only'])).toBeNull();
  });

  it('writes one field per entry and still reads version 2 entries (raw bodies in their own fields)', () => {
    const { run } = harness();
    const exchange = CASES[0]![1];
    const fields = run(exchange)!.stream!;
    expect(fields.length).toBe(2);
    expect(fields[0]).toBe('e');
    const v3 = decodeStreamRecord(fields)!;
    // The same event as version 2 fields: `m` (v 2, no `k`), then the bodies in `q` and `r`.
    const value = fields[1] as Buffer;
    const end = value.indexOf(0x0a);
    const meta = JSON.parse(value.toString('utf8', 0, end)) as { v: number; qb: { k?: number }; rb: { k?: number } };
    const requestBytes = value.subarray(end + 1, end + 1 + meta.qb.k!);
    const responseBytes = value.subarray(end + 1 + meta.qb.k!);
    expect(responseBytes.length).toBe(meta.rb.k);
    const v2 = { ...meta, v: 2, qb: { ...meta.qb, k: undefined }, rb: { ...meta.rb, k: undefined } };
    expect(decodeStreamRecord(['m', JSON.stringify(v2), 'q', requestBytes, 'r', responseBytes])).toEqual(v3);
    expect(decodeStreamRecord(['m', JSON.stringify(v2), 'r', responseBytes, 'q', requestBytes])).toEqual(v3);
  });

  it('reads a version 3 value: bodies split by their kept lengths, anything inconsistent is not ours', () => {
    const meta = { v: 3, id: 'evt_1', t: 1, s: 'svc', m: 'POST', p: '/x', q: 'a=1', qh: {}, qb: { n: 5, ct: 'text/plain', k: 3 }, sc: 200, rh: {}, rb: { n: 2, k: 2 }, ma: ['w'] };
    const record = decodeStreamRecord(['e', encodeEntry(JSON.stringify(meta), [Buffer.from('ab\n'), Buffer.from([0xff, 0x0a])])])!;
    expect(record.event.request).toMatchObject({ query: { a: '1' }, body: 'ab\n', bodyTruncated: true });
    expect(record.event.response.bodyTruncated).toBe(false);
    expect(record.event.response.body).toEqual(captureBody(Buffer.from([0xff, 0x0a]), { limit: 2, totalBytes: 2 }).body);
    const without = { ...meta, qb: undefined, rb: undefined };
    expect(decodeStreamRecord(['e', encodeEntry(JSON.stringify(without), [])])!.event.request.body).toBeNull();
    expect(decodeStreamRecord(['e', encodeEntry(JSON.stringify({ ...meta, rb: { n: 9, k: 9 } }), [Buffer.from('abc'), Buffer.from('de')])])).toBeNull();
    expect(decodeStreamRecord(['e', encodeEntry(JSON.stringify({ ...meta, v: 2 }), [Buffer.from('abc'), Buffer.from('de')])])).toBeNull();
    expect(decodeStreamRecord(['e', Buffer.from(JSON.stringify(meta))])).toBeNull();
    expect(decodeStreamRecord(['e', 'not json\n'])).toBeNull();
  });

  it('tells an entry of a newer version (left for an upgraded worker) from one that is not ours', () => {
    expect(isNewerEntry(['e', Buffer.from('{"v":5,"id":"evt_1"}\nbody')])).toBe(true);
    expect(isNewerEntry(['m', '{"v":12}'])).toBe(true);
    expect(isNewerEntry(['e', Buffer.from('{"v":3,"id":"evt_1"}\n')])).toBe(false);
    expect(isNewerEntry(['e', '{"v":4,"n":2}', 'e', '{}', 'e', '{}'])).toBe(false);
    expect(isNewerEntry(['e', Buffer.from('{"id":"evt_1","v":5}\n')])).toBe(false);
    expect(isNewerEntry(['x', '{"v":4}'])).toBe(false);
    expect(isNewerEntry(['e', 'garbage'])).toBe(false);
    expect(isNewerEntry(null)).toBe(false);
  });
});

describe('stream entries (version 4): several events in one entry', () => {
  const meta = (i: number, extra: object = {}) => ({ v: 3, id: `evt_${i}`, t: i, s: 'svc', m: 'POST', p: `/x/${i}`, q: '', qh: {}, sc: 200, rh: {}, ma: ['w'], ...extra });
  const value = (i: number) => encodeEntry(JSON.stringify(meta(i, { rb: { n: 3, k: 3 } })), [Buffer.from([i, 0x0a, 0xff])]);

  it('packs runs of values, each event in a field of its own, and reads back every event, in order, bodies intact', () => {
    const values = Array.from({ length: 70 }, (_, i) => value(i));
    const entries = packEntries(values, 32, 1 << 20);
    expect(entries).toHaveLength(3);
    expect(entries[0]!.slice(0, 2)).toEqual(['e', '{"v":4,"n":32}']);
    expect(entries[0]![3]).toBe(values[0]); // the value itself, not a copy
    expect(entries.map((e) => e.length)).toEqual([66, 66, 14]);
    const records = entries.flatMap((e) => decodeStreamEntry(e)!);
    expect(records.map((r) => r.event.id)).toEqual(values.map((_, i) => `evt_${i}`));
    expect(records[7]!.event.response.body).toEqual(captureBody(Buffer.from([7, 0x0a, 0xff]), { limit: 3, totalBytes: 3 }).body);
    expect(records[7]!.matched).toEqual([{ id: 'w', reason: 'the condition matched POST /x/7 (response 200)' }]);
  });

  it('keeps a lone value, and a value larger than the byte budget, as a version 3 entry', () => {
    expect(packEntries([value(1)], 32, 1 << 20)).toEqual([['e', value(1)]]);
    const big = encodeEntry(JSON.stringify(meta(2, { rb: { n: 5000, k: 5000 } })), [Buffer.alloc(5000, 1)]);
    const entries = packEntries([value(1), big, value(3), value(4)], 32, 1000);
    expect(entries.map((e) => decodeStreamEntry(e)!.map((r) => r.event.id))).toEqual([['evt_1'], ['evt_2'], ['evt_3', 'evt_4']]);
    expect(entries[1]).toEqual(['e', big]);
    expect(packEntries([value(1), value(2)], 1, 1 << 20)).toEqual([
      ['e', value(1)],
      ['e', value(2)],
    ]);
  });

  it('reads versions 1 to 3 as one event, and treats a version 4 entry that does not add up as not ours', () => {
    expect(decodeStreamEntry(['e', value(5)])!.map((r) => r.event.id)).toEqual(['evt_5']);
    expect(decodeStreamEntry(['m', JSON.stringify({ ...meta(6), v: 2 })])!.map((r) => r.event.id)).toEqual(['evt_6']);
    const [good] = packEntries([value(1), value(2)], 32, 1 << 20);
    expect(decodeStreamEntry(good)).toHaveLength(2);
    expect(decodeStreamEntry(['e', '{"v":4,"n":3}', 'e', value(1), 'e', value(2)])).toBeNull(); // fewer events than announced
    expect(decodeStreamEntry(['e', '{"v":4,"n":1}', 'e', value(1), 'e', value(2)])).toBeNull(); // more
    expect(decodeStreamEntry(['e', '{"v":4,"n":2}', 'e', value(1), 'x', value(2)])).toBeNull(); // a field of another name
    expect(decodeStreamEntry(['e', '{"v":4,"n":-2}', 'e', value(1), 'e', value(2)])).toBeNull();
    expect(decodeStreamEntry(['e', '{"v":4,"n":"2"}', 'e', value(1), 'e', value(2)])).toBeNull();
    expect(decodeStreamEntry(['e', '{"v":4,"n":2,"x":1}', 'e', value(1), 'e', value(2)])).toBeNull();
    expect(decodeStreamEntry(['e', 'garbage'])).toBeNull();
    // A value inside that is not an event of ours is left out; the others are delivered.
    expect(decodeStreamEntry(['e', '{"v":4,"n":2}', 'e', value(1), 'e', 'junk'])!.map((r) => r.event.id)).toEqual(['evt_1']);
    // As a plain XRANGE answers it (strings), when the bodies are valid UTF-8.
    const text = packEntries([encodeEntry(JSON.stringify(meta(8)), []), encodeEntry(JSON.stringify(meta(9)), [])], 32, 1 << 20)[0]!.map(String);
    expect(decodeStreamEntry(text)!.map((r) => r.event.id)).toEqual(['evt_8', 'evt_9']);
    // A worker that reads versions 1 to 3 does not take it for an event (its decoder is
    // decodeStreamRecord), and its isNewerEntry finds version 4 > 3 in the first field: it leaves
    // the entry for an upgraded worker.
    expect(decodeStreamRecord(good)).toBeNull();
    expect(/^\{"v":(\d+)[,}]/.exec(String(good![1]))?.[1]).toBe('4');
    expect(STREAM_VERSION).toBe(4);
    expect(isNewerEntry(good)).toBe(false);
  });
});
