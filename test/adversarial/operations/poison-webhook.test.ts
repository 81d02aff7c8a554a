/**
 * One poison event must not stall webhook delivery (issue 11, item 2). Two poisons, each
 * followed at once by normal events that must all be delivered within 5 s (a generous margin
 * on a loaded machine; the stall this guards against lasted minutes):
 * - black box: a matching request whose JSON body nests 5,000 deep. Capture keeps such a body
 *   as its text with `bodyTooDeep`, so it is delivered like any other and its log says so;
 * - an entry the worker cannot process at all (written straight into the stream, as an older
 *   or broken producer could: an inline body nested 20,000 deep that no serializer can write).
 *   It ends as a `failed` log entry naming the reason, and it is acknowledged.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../../src/store/keys.js';
import { META_FIELD } from '../../../src/webhooks/stream-record.js';
import { call, untilKnown, waitFor } from '../../integration/webhooks/webhooks-helpers.js';
import { ROOT, useStack } from '../../support/fixtures.js';

const DELIVERY_DEADLINE_MS = 5000;

describe('a poison webhook event', () => {
  const stack = useStack({
    service: 'adv-poison',
    upstream: (req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}'));
    },
    target: true,
    users: { root: ['root'] },
    config: { acl: { mode: 'own-routes' }, webhooks: { allowPrivateTargets: ['127.0.0.0/8'], retrySchedule: ['300ms'] } },
    outrigger: { worker: true },
  });
  let hookId: string;
  beforeAll(async () => {
    const hook = await call(stack.proxy.url, '/_admin/webhooks', {
      method: 'POST',
      auth: ROOT,
      body: { name: 'orders', type: 'http', condition: "method(POST) and path-prefix('/poison')", url: `${stack.target.url}/hook` },
    });
    expect(hook.status, hook.text).toBe(201);
    hookId = hook.json._id;
    await untilKnown([stack.proxy], hookId);
  });

  const logsOf = async () => (await call(stack.proxy.url, `/_admin/webhooks/${hookId}/logs?pagesize=100`, { auth: ROOT })).json as any[];
  const logEntryOf = (eventId: string, what: string) =>
    waitFor(
      async () => (await logsOf()).find((e) => e.eventId === eventId),
      (e) => e !== undefined,
      DELIVERY_DEADLINE_MS,
      what,
    );

  async function normalEventsDelivered(tag: string): Promise<number> {
    const started = performance.now();
    for (let i = 0; i < 5; i++) {
      const res = await call(stack.proxy.url, `/poison/normal-${tag}-${i}`, { method: 'POST', body: { n: i } });
      expect(res.status).toBe(201);
    }
    await waitFor(
      () => stack.target.received.filter((r) => r.body.includes(`/poison/normal-${tag}-`)).length,
      (n) => n === 5,
      DELIVERY_DEADLINE_MS,
      `the 5 normal events after the ${tag} poison`,
    );
    return performance.now() - started;
  }

  it('a body nested 5,000 deep is captured as text with bodyTooDeep, and later events are not delayed', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const res = await call(stack.proxy.url, '/poison/deep', { method: 'POST', rawBody: deep, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
    await normalEventsDelivered('deep');
    const entry = await waitFor(
      async () => (await logsOf()).find((e) => e.summary.path === '/poison/deep'),
      (e) => e !== undefined,
      DELIVERY_DEADLINE_MS,
      'the log entry of the deep event',
    );
    expect(entry.status).toBe('success');
    expect(entry.detail.incomingRequest.bodyTooDeep).toBe(true);
    expect(entry.detail.incomingRequest.body).toBe(deep);
  });

  it('bodies shaped against the canonical-JSON check reach the target as JSON.stringify of their value, and later events are not delayed', async () => {
    // The worker embeds a JSON body as its own text only when that text is JSON.stringify's; these
    // are built to make that check slow (wide objects, many decimals) or wrong (a repeated name,
    // other spellings of the same value). Each must arrive as the value JSON.parse reads. All are
    // under the 64 KiB capture cap, so all are captured as JSON.
    const wide = `{${Array.from({ length: 5000 }, (_, i) => `"k${i}":${i}`).join(',')}}`;
    const decimals = `[${Array.from({ length: 7000 }, (_, i) => `${i}.25`).join(',')}]`;
    const long = `[${Array.from({ length: 3000 }, (_, i) => `0.1234567890123456${i % 10}`).join(',')}]`;
    const tricky = ['{"a":1,"a":2}', '{ "spaced" : [ 1 , 2 ] }', '{"n":1.0,"e":1E3,"z":-0}', '{"s":"\\u0041\\/"}'];
    const bodies = [wide, decimals, long, ...tricky];
    for (const [i, body] of bodies.entries()) {
      const res = await call(stack.proxy.url, `/poison/shaped-${i}`, { method: 'POST', rawBody: body, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(201);
    }
    await normalEventsDelivered('shaped');
    for (const [i, body] of bodies.entries()) {
      const got = await waitFor(
        () => stack.target.received.find((r) => r.body.includes(`"path":"/poison/shaped-${i}"`)),
        (r) => r !== undefined,
        DELIVERY_DEADLINE_MS,
        `the delivery of shaped body ${i}`,
      );
      expect(got!.body).toContain(`"body":${JSON.stringify(JSON.parse(body))}`);
      expect(JSON.parse(got!.body).request.body).toEqual(JSON.parse(JSON.stringify(JSON.parse(body))));
    }
  });

  it('an entry the worker cannot process ends as a failed log entry with its reason, is acknowledged, and delays nothing', async () => {
    const keys = redisKeys(stack.proxy.context.config.redis.keyPrefix, 'adv-poison');
    const eventId = `poison-${Date.now()}`;
    const depth = 20_000;
    const head = JSON.stringify({ v: 2, id: eventId, t: Date.now(), s: 'adv-poison', m: 'POST', p: '/poison/unprocessable', q: '', qh: {}, sc: 201, rh: {}, ma: [hookId] });
    // Written by hand: JSON.stringify itself cannot produce this body.
    const meta = `${head.slice(0, -1)},"qb":{"b":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    await stack.redis.client.xadd(keys.events, '*', META_FIELD, meta);

    await normalEventsDelivered('unprocessable');
    const entry = await logEntryOf(eventId, 'the failed entry of the unprocessable event');
    expect(entry.status).toBe('failed');
    expect(entry.summary.error).toMatch(/the worker could not process this event: .*(call stack|serializ)/i);
    expect(entry.detail.incomingRequest.bodyTooDeep).toBe(true);
    // Acknowledged: nothing of it stays pending for a reclaim that would repeat the cycle.
    await waitFor(
      async () => (await stack.redis.client.xpending(keys.events, keys.eventsGroup)) as unknown[],
      (p) => Number(p[0]) === 0,
      DELIVERY_DEADLINE_MS,
      'no pending entries',
    );
    const failed = await call(stack.proxy.url, `/_admin/webhooks/${hookId}/logs?status=failed`, { auth: ROOT });
    expect(failed.json.some((e: any) => e.eventId === eventId)).toBe(true);
  });

  it('an entry of several events (version 4) with a poison, a stranger and a forged count inside: the good event is delivered, the poison logged failed, the entry acknowledged', async () => {
    const keys = redisKeys(stack.proxy.context.config.redis.keyPrefix, 'adv-poison');
    const stamp = Date.now();
    const head = (id: string, path: string) => JSON.stringify({ v: 3, id, t: stamp, s: 'adv-poison', m: 'POST', p: path, q: '', qh: {}, sc: 201, rh: {}, ma: [hookId] });
    const depth = 20_000;
    const poisonId = `batch-poison-${stamp}`;
    // Written by hand: JSON.stringify itself cannot produce this body.
    const poison = `${head(poisonId, '/poison/batch-unprocessable').slice(0, -1)},"qb":{"b":${'['.repeat(depth)}${']'.repeat(depth)}}}\n`;
    const good = `${head(`batch-good-${stamp}`, '/poison/batch-good')}\n`;
    await stack.redis.client.xadd(keys.events, '*', 'e', '{"v":4,"n":3}', 'e', poison, 'e', 'not an event', 'e', good);
    // A count that does not match its fields (a forged or cut entry): not ours, acknowledged, nothing sent.
    await stack.redis.client.xadd(keys.events, '*', 'e', '{"v":4,"n":999999}', 'e', good, 'e', good);

    await normalEventsDelivered('batch');
    await waitFor(
      () => stack.target.received.filter((r) => r.body.includes('"path":"/poison/batch-good"')).length,
      (n) => n === 1,
      DELIVERY_DEADLINE_MS,
      'the good event of the batch',
    );
    const entry = await logEntryOf(poisonId, 'the failed entry of the poison in the batch');
    expect(entry.status).toBe('failed');
    await waitFor(
      async () => (await stack.redis.client.xpending(keys.events, keys.eventsGroup)) as unknown[],
      (p) => Number(p[0]) === 0,
      DELIVERY_DEADLINE_MS,
      'no pending entries',
    );
    // Every entry read, finished and deleted: nothing is left that could still send (issue 54).
    await waitFor(
      () => stack.redis.client.xlen(keys.events),
      (n) => n === 0,
      DELIVERY_DEADLINE_MS,
      'every entry deleted',
    );
    expect(stack.target.received.filter((r) => r.body.includes('"path":"/poison/batch-good"'))).toHaveLength(1); // the forged entry sent nothing
  });
});
