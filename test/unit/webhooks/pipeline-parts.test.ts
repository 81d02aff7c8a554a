import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../../src/config/validate.js';
import { BodyTap } from '../../../src/webhooks/capture/observed-request.js';
import { queryObject } from '../../../src/webhooks/event.js';
import { newEventId } from '../../../src/webhooks/event.js';
import { newLogId, skippedLogEntry } from '../../../src/webhooks/log-entry.js';
import { nextRetryDelayMs, parseRetryAfter } from '../../../src/webhooks/deliver/retry-policy.js';
import { decodeStreamRecord, encodeStreamRecord } from '../../../src/webhooks/stream-record.js';
import { sampleEvent as sampleTestEvent } from '../../../src/webhooks/routes/test-send.js';
import { createHeaderRedactor } from '../../../src/webhooks/capture/redaction.js';
import { sampleEvent } from './fixtures.js';

const SCHEDULE = [5_000, 60_000, 600_000, 3_600_000, 21_600_000];

describe('retry policy', () => {
  it('follows the schedule with 0-20 % jitter, never earlier than scheduled, then gives up', () => {
    expect(nextRetryDelayMs(SCHEDULE, 1, null, () => 0)).toBe(5_000);
    expect(nextRetryDelayMs(SCHEDULE, 1, null, () => 0.999)).toBe(5_999);
    expect(nextRetryDelayMs(SCHEDULE, 2, null, () => 0.5)).toBe(66_000);
    expect(nextRetryDelayMs(SCHEDULE, 5, null, () => 0)).toBe(21_600_000);
    expect(nextRetryDelayMs(SCHEDULE, 6, null, () => 0)).toBeNull(); // six attempts in all
    expect(nextRetryDelayMs([], 1, null)).toBeNull();
  });

  it('lets Retry-After replace the delay of that attempt, bounded to a day, without adding attempts', () => {
    expect(nextRetryDelayMs(SCHEDULE, 1, 120_000, () => 0.5)).toBe(120_000);
    expect(nextRetryDelayMs(SCHEDULE, 3, 1_000, () => 0.5)).toBe(1_000);
    expect(nextRetryDelayMs(SCHEDULE, 1, 10 * 86_400_000)).toBe(86_400_000);
    expect(nextRetryDelayMs(SCHEDULE, 6, 1_000)).toBeNull();
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.UTC(2026, 0, 1, 0, 0, 0);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
    expect(parseRetryAfter(['7', '9'], now)).toBe(7_000);
  });
});

describe('webhook configuration', () => {
  const base = { service: { id: 's' }, upstream: { url: 'http://127.0.0.1:1' } };
  it('defaults to the SPEC schedule, 60 s recordings and days of retention', () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.webhooks).toMatchObject({ retrySchedule: SCHEDULE, recordingSeconds: 60, logRetentionDays: 30, logRetentionSeconds: null, reclaimIdleMs: 120_000 });
  });
  it('reads delays as seconds or with units, and reports bad ones by path', () => {
    const ok = validateConfig({ ...base, webhooks: { retrySchedule: [0.25, '200ms', '5s', '1m', '1.5h', '1d'], logRetentionSeconds: 60 } });
    expect(ok.problems).toEqual([]);
    expect(ok.config.webhooks.retrySchedule).toEqual([250, 200, 5_000, 60_000, 5_400_000, 86_400_000]);
    expect(ok.config.webhooks.logRetentionSeconds).toBe(60);
    const bad = validateConfig({ ...base, webhooks: { retrySchedule: ['5 parsecs', -1, '8d'], recordingSeconds: 0, reclaimIdleMs: 5, logRetentionSeconds: 'x' } });
    expect(bad.problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('webhooks.retrySchedule[0]'),
        expect.stringContaining('webhooks.retrySchedule[1]'),
        expect.stringContaining('webhooks.retrySchedule[2]'),
        expect.stringContaining('webhooks.recordingSeconds'),
        expect.stringContaining('webhooks.reclaimIdleMs'),
        expect.stringContaining('webhooks.logRetentionSeconds'),
      ]),
    );
    expect(validateConfig({ ...base, webhooks: { retrySchedule: 'often' } }).problems).toEqual([expect.stringContaining('webhooks.retrySchedule: must be a list')]);
    expect(validateConfig({ ...base, webhooks: { retrySchedule: [] } }).config.webhooks.retrySchedule).toEqual([]);
  });
});

describe('capture parts', () => {
  it('keeps body chunks by reference up to the cap and counts the rest', () => {
    const tap = new BodyTap(10);
    const a = Buffer.from('hello');
    tap.add(a);
    expect(tap.bytes()).toBe(a); // one chunk: no copy
    tap.add(Buffer.from('world!!!'));
    tap.add(Buffer.from('more'));
    expect(tap.bytes().toString()).toBe('helloworld');
    expect(tap.total).toBe(17);
    expect(new BodyTap(0).bytes().length).toBe(0);
  });

  it('turns a raw query into names with one value or a list', () => {
    expect(queryObject('')).toEqual({});
    expect(queryObject('a=1&b=x%20y&a=2&a=3&c')).toEqual({ a: ['1', '2', '3'], b: 'x y', c: '' });
    expect(Object.getPrototypeOf(queryObject('__proto__=x'))).toBe(Object.prototype);
  });

  it('makes unique ids without dots or colons', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newEventId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^evt_[a-z0-9-]+$/);
    expect(newLogId(1000) < newLogId(2000)).toBe(true);
  });

  it('round-trips stream records and refuses anything else', () => {
    const record = { v: 1 as const, event: sampleEvent(), matched: [{ id: 'w', reason: 'r' }], skipped: [] };
    expect(decodeStreamRecord(['d', encodeStreamRecord(record)])).toEqual(record);
    expect(decodeStreamRecord(['x', '1', 'd', encodeStreamRecord(record)])).toEqual(record);
    expect(decodeStreamRecord(['d', '{"v":2}'])).toBeNull();
    expect(decodeStreamRecord(['d', 'not json'])).toBeNull();
    expect(decodeStreamRecord(null)).toBeNull();
  });

  it('builds skipped entries with the incoming request and the reason', () => {
    const entry = skippedLogEntry(sampleEvent(), { _id: 'w1', type: 'email', email: { to: ['a@example.com'], cc: ['b@example.com'] } }, 'no match', 5);
    expect(entry).toMatchObject({
      webhookId: 'w1',
      status: 'skipped',
      attempt: 0,
      timestamp: { $date: 5 },
      summary: { method: 'POST', path: '/shop/orders', target: 'mailto:a@example.com,b@example.com', statusCode: null, error: null },
      detail: { condition: { matched: false, reason: 'no match' }, incomingRequest: { method: 'POST', query: { dryRun: 'false' } } },
    });
  });
});

describe('test-send sample events', () => {
  const redact = createHeaderRedactor([]);
  it('fills a default POST /sample/orders answered 201', () => {
    const e = sampleTestEvent(undefined, 'svc', redact, 7);
    expect(e).toMatchObject({ timestamp: 7, serviceId: 'svc', request: { method: 'POST', path: '/sample/orders', body: { _id: 'sample-1' } }, response: { statusCode: 201 } });
  });
  it('takes the caller sample, splits a query from the path, redacts secret headers', () => {
    const e = sampleTestEvent(
      { request: { method: 'put', path: '/a/b?x=1&x=2', query: { y: '3' }, headers: { Cookie: 'c=secret', 'X-A': 'b' }, body: 'text' }, response: { statusCode: 404, body: null } },
      'svc',
      redact,
    );
    expect(e.request).toMatchObject({ method: 'PUT', path: '/a/b', query: { x: ['1', '2'], y: '3' }, headers: { cookie: '[redacted]', 'x-a': 'b' }, body: 'text' });
    expect(e.response).toMatchObject({ statusCode: 404, body: null });
  });
  it('refuses malformed samples with the field named', () => {
    expect(() => sampleTestEvent({ request: { path: 'no-slash' } }, 's', redact)).toThrow(/event.request.path/);
    expect(() => sampleTestEvent({ response: { statusCode: 99 } }, 's', redact)).toThrow(/event.response.statusCode/);
    expect(() => sampleTestEvent({ request: { headers: { a: 1 } } }, 's', redact)).toThrow(/event.request.headers/);
    expect(() => sampleTestEvent({ extra: 1 }, 's', redact)).toThrow(/event.extra/);
    expect(() => sampleTestEvent({ request: { verb: 'GET' } }, 's', redact)).toThrow(/event.request.verb/);
  });
});
