/**
 * Preloaded into a process the soak watches (`node --expose-gc --import <this file> …`): on
 * SIGUSR2 it runs a full garbage collection and appends one JSON line with the memory left
 * afterwards to $OUTRIGGER_HEAP_PROBE_FILE. Resident memory and the heap sampled at a random
 * moment include garbage V8 has not collected yet (it lets the old generation grow for a while
 * before a full collection), so a 60 s run can show +30 % that is no leak; what survives a full
 * collection is what the process really keeps.
 */
import { appendFileSync } from 'node:fs';

const file = process.env.OUTRIGGER_HEAP_PROBE_FILE;
if (file && typeof globalThis.gc === 'function') {
  process.on('SIGUSR2', () => {
    globalThis.gc();
    // A second pass collects what the first one's finalizers and weak callbacks let go.
    globalThis.gc();
    // `rss` is the resident set size the soak reads from /proc for its other samples.
    const { heapUsed, rss, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), heapUsed, rss, external, arrayBuffers })}\n`);
  });
}
