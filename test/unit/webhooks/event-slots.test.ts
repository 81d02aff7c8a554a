import { describe, expect, it } from 'vitest';
import { EventSlots } from '../../../src/webhooks/deliver/event-slots.js';

describe('EventSlots: the worker delivers at most `size` events at once', () => {
  it('takes free slots at once, queues the rest in order, and hands each released slot to the first waiting', async () => {
    let releases = 0;
    const slots = new EventSlots(2, () => releases++);
    expect(slots.acquire()).toBeNull();
    expect(slots.acquire()).toBeNull();
    expect(slots.free).toBe(0);
    const started: number[] = [];
    const third = slots.acquire()!.then(() => started.push(3));
    const fourth = slots.acquire()!.then(() => started.push(4));
    expect(slots.free).toBe(-2); // two events wait: the read loop reads nothing until they ran
    await Promise.resolve();
    expect(started).toEqual([]);
    slots.release();
    await third;
    expect(started).toEqual([3]);
    expect(slots.free).toBe(-1);
    slots.release();
    await fourth;
    expect(started).toEqual([3, 4]);
    expect(slots.free).toBe(0);
    slots.release();
    slots.release();
    expect(slots.free).toBe(2);
    expect(releases).toBe(4);
    // A slot freed while nobody waits is taken at once by the next event, ahead of nothing.
    expect(slots.acquire()).toBeNull();
    expect(slots.free).toBe(1);
  });
});
