import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';

/**
 * SPEC §3.2's brute-force guard under concurrency (issue 34, item 6): every Basic attempt is
 * counted before its password is checked, so guesses sent at once cannot all read "under the
 * limit" and all be verified; a failed attempt stores a bounded key whatever user id it names.
 */
describe('concurrent password guesses', () => {
  const stack = useStack({
    service: 'password-guessing',
    upstream: (_req, res) => res.end('upstream'),
    users: { alice: ['user'], carol: ['user'], dave: ['user'] },
    config: { listen: { trustedProxies: ['127.0.0.1/32'] }, acl: { mode: 'own-routes' }, features: { webhooks: 'disabled' } },
  });
  // Many sockets at once, so the attempts really overlap at the proxy.
  const agent = new Agent({ connections: 200, pipelining: 0 });
  afterAll(() => agent.close());

  const attempt = async (ip: string, auth: string): Promise<number> => {
    const res = await request(`${stack.proxy.url}/a`, { dispatcher: agent, headers: { authorization: auth, 'x-forwarded-for': ip } });
    await res.body.dump();
    return res.statusCode;
  };
  const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((all, s) => ({ ...all, [s]: (all[s] ?? 0) + 1 }), {});

  it('60 wrong passwords at once for one user from one address: 10 are checked, the rest 429', async () => {
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => attempt('127.90.0.1', basic('alice', `guess-${i}`))));
    const counts = tally(statuses);
    expect(counts[401] ?? 0, JSON.stringify(counts)).toBeLessThanOrEqual(10);
    expect(counts[429] ?? 0, JSON.stringify(counts)).toBeGreaterThanOrEqual(50);
    // The right password too: the lock is on (user, address).
    expect(await attempt('127.90.0.1', basic('alice', 'alice-password'))).toBe(429);
    // Another address is someone else.
    expect(await attempt('127.90.0.9', basic('alice', 'alice-password'))).toBe(200);
  });

  it('1,000 failures at once with distinct user ids from one address stop at the daily 100', { timeout: 120_000 }, async () => {
    const statuses = await Promise.all(Array.from({ length: 1000 }, (_, i) => attempt('127.90.0.2', basic(`user-${i}`, 'guess'))));
    const counts = tally(statuses);
    expect(counts[401] ?? 0, JSON.stringify(counts)).toBeLessThanOrEqual(100);
    const day = new Date().toISOString().slice(0, 10);
    expect(Number(await stack.redis.client.get(`outrigger:{password-guessing}:bf:ip:127.90.0.2:${day}`))).toBeLessThanOrEqual(100);
  });

  it('a right password gives its attempt back: signing in does not use up the day', async () => {
    for (let i = 0; i < 3; i++) expect(await attempt('127.90.0.3', basic('alice', 'alice-password'))).toBe(200);
    const day = new Date().toISOString().slice(0, 10);
    expect(Number(await stack.redis.client.get(`outrigger:{password-guessing}:bf:ip:127.90.0.3:${day}`))).toBe(0);
  });

  it('30 requests at once with the RIGHT password from one address, cold cache: all succeed', async () => {
    // Each check reserves an attempt before verifying; concurrent checks of the same credentials
    // share one check, so a client's burst of first-sight requests takes one place, not 30.
    const statuses = await Promise.all(Array.from({ length: 30 }, () => attempt('127.90.0.5', basic('carol', 'carol-password'))));
    expect(tally(statuses)).toEqual({ 200: 30 });
    const day = new Date().toISOString().slice(0, 10);
    expect(Number(await stack.redis.client.get(`outrigger:{password-guessing}:bf:ip:127.90.0.5:${day}`))).toBe(0);
  });

  it('60 copies of the SAME wrong password at once count as one failure (or a few), not 60', async () => {
    const statuses = await Promise.all(Array.from({ length: 60 }, () => attempt('127.90.0.6', basic('dave', 'the-same-guess'))));
    const counts = tally(statuses);
    // Copies that arrive after a shared check has ended start a new one; a few at most.
    const failures = Number(await stack.redis.client.get('outrigger:{password-guessing}:bf:u:dave:127.90.0.6'));
    expect(failures, JSON.stringify(counts)).toBeGreaterThanOrEqual(1);
    expect(failures, JSON.stringify(counts)).toBeLessThanOrEqual(5);
    expect(counts[401] ?? 0, JSON.stringify(counts)).toBe(60);
    // dave can still sign in from there: one guess did not lock him out.
    expect(await attempt('127.90.0.6', basic('dave', 'dave-password'))).toBe(200);
  });

  it('an 11,000-character user id stores a bounded key', async () => {
    const long = 'u'.repeat(11_000);
    expect(await attempt('127.90.0.4', basic(long, 'guess'))).toBe(401);
    const keys = await stack.redis.client.keys('outrigger:{password-guessing}:bf:u:*127.90.0.4');
    expect(keys).toHaveLength(1);
    expect(keys[0]!.length).toBeLessThan(300);
    expect(Number(await stack.redis.client.get(keys[0]!))).toBe(1);
  });
});
