import { afterAll, describe, expect, it } from 'vitest';
import { call, type CallResult } from '../../support/clients/http-client.js';
import { as, ROOT, useStack } from '../../support/fixtures.js';

const ALICE = as('alice');
/** How long Redis stays frozen at most: far longer than any deadline Outrigger keeps. */
const FREEZE_MS = 20_000;

/**
 * Issue 34 item 8: Redis freezes (SIGSTOP: its sockets stay open, the kernel still accepts
 * connections, nothing answers). Requests whose Redis commands were sent into the freeze must get
 * SPEC §2's 503 at their command deadline (redis.commandTimeoutMs), not wait out the freeze; a
 * reconnect by the stall watchdog must not resend them without one.
 */
describe('Redis frozen with requests in flight', () => {
  const stack = useStack({
    service: 'redis-freeze',
    upstream: (_req, res) => res.end('upstream'),
    users: { root: ['root'], alice: ['user'] },
    config: { acl: { mode: 'enforce' }, features: { webhooks: 'disabled' } },
    permissions: { keys: { predicate: 'path-prefix(/keys)', roles: ['user'], apiKeys: { roles: ['reader'] } } },
  });
  let frozenPid = 0;
  const thaw = () => {
    if (frozenPid) process.kill(frozenPid, 'SIGCONT');
    frozenPid = 0;
  };
  afterAll(thaw);

  it('answers 503 with Retry-After while Redis is still frozen, and serves again once it thaws', { timeout: 90_000 }, async () => {
    // Warm: both users signed in (cached), so the requests below need Redis only for their own work.
    expect((await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'warm', roles: ['reader'] } })).status).toBe(201);
    expect((await call(stack.proxy.url, '/_admin/acl', { auth: ROOT })).status).toBe(200);
    const pid = Number(/process_id:(\d+)/.exec(await stack.redis.client.info('server'))?.[1]);
    expect(pid).toBeGreaterThan(0);

    process.kill(pid, 'SIGSTOP');
    frozenPid = pid;
    type Outcome = { res: CallResult; whileFrozen: boolean };
    let frozen = true;
    const requests: Array<Promise<Outcome>> = [
      ...Array.from({ length: 4 }, (_, i) => call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: `frozen-${i}`, roles: ['reader'] } })),
      call(stack.proxy.url, '/_admin/acl', { auth: ROOT }),
      call(stack.proxy.url, '/keys', { auth: ALICE }),
    ].map((p) => p.then((res) => ({ res, whileFrozen: frozen })));
    // Every answer, or the end of the freeze, whichever comes first; then Redis thaws.
    const settled = Promise.all(requests);
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, FREEZE_MS))]);
    frozen = false;
    thaw();
    const outcomes = await settled;
    for (const { res, whileFrozen } of outcomes) {
      expect(whileFrozen, `answered ${res.status} only after Redis thawed (${FREEZE_MS} ms frozen)`).toBe(true);
      expect(res.status, res.text).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.json?.message).toMatch(/Redis/);
    }

    // Healed: the same requests succeed once Redis answers again.
    await expect
      .poll(async () => (await call(stack.proxy.url, '/keys', { method: 'POST', auth: ALICE, body: { name: 'after', roles: ['reader'] } })).status, { timeout: 20_000, interval: 250 })
      .toBe(201);
  });
});
