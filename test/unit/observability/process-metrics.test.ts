import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ProcessMetrics } from '../../../src/observability/process-metrics.js';

function value(text: string, line: string): number {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  if (!found) throw new Error(`no ${line} in:\n${text}`);
  return Number(found.slice(line.length + 1));
}

describe('process metrics on /_metrics', () => {
  it('reports a loop blocked for 120 ms as event-loop delay, then starts over at the next scrape', async () => {
    const metrics = new ProcessMetrics();
    await sleep(50); // a few samples of an idle loop
    const until = performance.now() + 120;
    while (performance.now() < until) {
      // block the loop, as a request doing synchronous work would
    }
    await sleep(50);
    const first = metrics.render();
    expect(value(first, 'outrigger_event_loop_delay_seconds{quantile="1"}')).toBeGreaterThanOrEqual(0.1);
    expect(value(first, 'outrigger_event_loop_delay_seconds{quantile="0.99"}')).toBeGreaterThanOrEqual(0.1);
    expect(value(first, 'outrigger_process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(value(first, 'outrigger_process_heap_used_bytes')).toBeGreaterThan(1024 * 1024);

    await sleep(100);
    const second = metrics.render();
    // The blocked stretch belongs to the previous interval only.
    expect(value(second, 'outrigger_event_loop_delay_seconds{quantile="1"}')).toBeLessThan(0.1);
  });
});
