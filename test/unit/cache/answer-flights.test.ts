/**
 * Whole GraphQL answers in flight (src/cache/answer-flights.ts): identical misses wait for the
 * first executor and are let go when it lands; a key nobody executes has nothing to wait for; a
 * waiting caller whose signal aborts stops waiting alone; a second `begin` keeps the first.
 */
import { describe, expect, it } from 'vitest';
import { AnswerFlights } from '../../../src/cache/answer-flights.js';
import { RequestAbort } from '../../../src/util/request-abort.js';

describe('AnswerFlights', () => {
  it('lets the waiting callers go when the executor lands, once', async () => {
    const flights = new AnswerFlights();
    expect(flights.join('k', undefined)).toBeUndefined();
    const land = flights.begin('k');
    const order: string[] = [];
    const waits = [flights.join('k', undefined)!.then(() => order.push('a')), flights.join('k', undefined)!.then(() => order.push('b'))];
    expect(flights.waiting).toBe(2);
    expect(flights.join('other', undefined)).toBeUndefined();
    land();
    land();
    await Promise.all(waits);
    expect(order).toEqual(['a', 'b']);
    expect(flights.waiting).toBe(0);
    expect(flights.size).toBe(0);
  });

  it('a waiting caller whose signal aborts stops waiting; the others still wait', async () => {
    const flights = new AnswerFlights();
    const land = flights.begin('k');
    const signal = new RequestAbort();
    let leftEarly = false;
    let stayed = false;
    const leaving = flights.join('k', signal)!.then(() => (leftEarly = true));
    const staying = flights.join('k', new RequestAbort())!.then(() => (stayed = true));
    signal.abort();
    await leaving;
    expect(leftEarly).toBe(true);
    expect(stayed).toBe(false);
    expect(flights.waiting).toBe(1);
    land();
    await staying;
    expect(flights.waiting).toBe(0);
  });

  it('a second begin while one executes keeps the first; its landing touches nothing', async () => {
    const flights = new AnswerFlights();
    const first = flights.begin('k');
    const second = flights.begin('k');
    let released = false;
    const wait = flights.join('k', undefined)!.then(() => (released = true));
    second();
    expect(flights.size).toBe(1);
    first();
    await wait;
    expect(released).toBe(true);
    expect(flights.size).toBe(0);
  });
});
