/**
 * One subscription's queue (src/graphql/subscribe/subscription.ts): results handed out in the
 * order they were pushed whatever order they resolve in, non-matching changes skipped, a resume's
 * missed changes before the live ones held meanwhile with nothing twice, and the bounds.
 */
import { describe, expect, it } from 'vitest';
import type { ExecutionResult } from 'graphql';
import { SubscriptionStream, type EndReason } from '../../../../src/graphql/subscribe/subscription.js';

const result = (n: number): ExecutionResult => ({ data: { n } });
const later = <T>(value: T, ms: number) => new Promise<T>((r) => setTimeout(() => r(value), ms));

async function take(stream: SubscriptionStream, count: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const next = await stream.next();
    if (next.done) break;
    out.push(next.value.data?.n ?? next.value.errors?.[0]?.extensions?.code);
  }
  return out;
}

describe('SubscriptionStream', () => {
  it('hands results out in push order, skips nulls, records positions in order', async () => {
    const positions: Array<string | null> = [];
    const s = new SubscriptionStream(
      'sse',
      10,
      () => {},
      (p) => positions.push(p),
    );
    s.push('1-0', later(result(1), 30));
    s.push('2-0', Promise.resolve(null));
    s.push('3-0', Promise.resolve(result(3)));
    s.push('3-0', Promise.resolve(result(99))); // the same position twice: dropped
    expect(await take(s, 2)).toEqual([1, 3]);
    expect(positions).toEqual(['1-0', '3-0']);
  });

  it('a resume: missed changes first, then the live ones held meanwhile, nothing twice', async () => {
    const s = new SubscriptionStream('sse', 10, () => {});
    s.hold();
    s.push('5-0', Promise.resolve(result(5))); // live, arrived while the backlog was read
    s.push('6-0', Promise.resolve(result(6)));
    s.pushMissed('4-0', Promise.resolve(result(4)));
    s.pushMissed('5-0', Promise.resolve(result(5)));
    s.release();
    s.push('7-0', Promise.resolve(result(7)));
    expect(await take(s, 4)).toEqual([4, 5, 6, 7]);
  });

  it('more than maxBufferedEvents waiting ends it with SLOW_SUBSCRIBER (SSE: an error result, then done)', async () => {
    let ended: EndReason | null = null;
    const s = new SubscriptionStream('sse', 3, (r) => (ended = r));
    for (let i = 1; i <= 4; i++) s.push(`${i}-0`, Promise.resolve(result(i)));
    expect(ended).toMatchObject({ code: 'SLOW_SUBSCRIBER' });
    expect(await take(s, 2)).toEqual(['SLOW_SUBSCRIBER']);
    expect((await s.next()).done).toBe(true);
  });

  it('over WebSocket an end is thrown (graphql-ws sends it as an error message)', async () => {
    const s = new SubscriptionStream('ws', 3, () => {});
    s.end({ message: 'revoked', code: 'UNAUTHENTICATED' });
    await expect(s.next()).rejects.toThrow('revoked');
    expect((await s.next()).done).toBe(true);
  });

  it('return() releases it once, without a reason', async () => {
    const reasons: Array<EndReason | null> = [];
    const s = new SubscriptionStream('sse', 3, (r) => reasons.push(r));
    const waiting = s.next();
    await s.return();
    expect((await waiting).done).toBe(true);
    await s.return();
    expect(reasons).toEqual([null]);
  });
});
