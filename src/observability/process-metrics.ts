import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/**
 * What the process itself reports on `/_metrics`: event-loop delay (how long a ready callback
 * waited for the loop: a request blocking it shows here first) and memory. The delay histogram
 * samples every 10 ms, as prom-client's Node collector does, and starts over at every scrape, so
 * each scrape reports the interval since the previous one.
 */
export class ProcessMetrics {
  private readonly delay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });

  constructor() {
    this.delay.enable();
  }

  render(): string {
    const d = this.delay;
    const seconds = (ns: number) => (Number.isFinite(ns) && d.count > 0 ? ns / 1e9 : 0);
    const memory = process.memoryUsage();
    const lines = [
      '# HELP outrigger_event_loop_delay_seconds Event-loop delay since the previous scrape (sampled every 10 ms), by quantile.',
      '# TYPE outrigger_event_loop_delay_seconds gauge',
      `outrigger_event_loop_delay_seconds{quantile="0.5"} ${seconds(d.percentile(50))}`,
      `outrigger_event_loop_delay_seconds{quantile="0.99"} ${seconds(d.percentile(99))}`,
      `outrigger_event_loop_delay_seconds{quantile="1"} ${seconds(d.max)}`,
      '# HELP outrigger_process_resident_memory_bytes Resident set size of this process.',
      '# TYPE outrigger_process_resident_memory_bytes gauge',
      `outrigger_process_resident_memory_bytes ${memory.rss}`,
      '# HELP outrigger_process_heap_used_bytes V8 heap in use.',
      '# TYPE outrigger_process_heap_used_bytes gauge',
      `outrigger_process_heap_used_bytes ${memory.heapUsed}`,
    ];
    d.reset();
    return `${lines.join('\n')}\n`;
  }
}
