/**
 * The soak judges memory growth on what bench/lib/heap-probe.mjs reports after a full GC. That
 * must see a leak and must not see garbage: a child process preloads the probe, allocates objects
 * that die (twice) and then objects it keeps, and the probe's report after each is compared.
 */
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const PROBE = pathToFileURL(resolve(import.meta.dirname, '../../../bench/lib/heap-probe.mjs')).href;

const CHILD = `
const kept = [];
let last;
process.on('message', (what) => {
  if (what === 'garbage') for (let i = 0; i < 300000; i++) last = { i, text: 'x'.repeat(40) + i };
  if (what === 'keep') for (let i = 0; i < 300000; i++) kept.push({ i, text: 'y'.repeat(40) + i });
  process.send('done');
});
process.send('ready');
`;

describe('bench heap probe (what the soak judges growth on)', () => {
  it('reports the heap a full GC leaves: allocations that died do not count, kept ones do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'heap-probe-'));
    const script = join(dir, 'child.mjs');
    const out = join(dir, 'heap.jsonl');
    writeFileSync(script, CHILD);
    const child = fork(script, [], { execArgv: ['--expose-gc', `--import=${PROBE}`], env: { ...process.env, OUTRIGGER_HEAP_PROBE_FILE: out }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const next = () => new Promise<void>((done) => child.once('message', () => done()));
    const lines = () =>
      existsSync(out)
        ? readFileSync(out, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { heapUsed: number; rss: number })
        : [];
    const report = async () => {
      const before = lines().length;
      child.kill('SIGUSR2');
      await expect.poll(() => lines().length, { timeout: 5000 }).toBe(before + 1);
      return lines().at(-1)!;
    };
    try {
      await next();
      const step = async (what: string) => {
        const done = next();
        child.send(what);
        await done;
        return report();
      };
      const first = await step('garbage');
      const second = await step('garbage');
      const third = await step('keep');
      // ~40 MB allocated between the first two reports, all of it dead by then.
      expect(Math.abs(second.heapUsed - first.heapUsed)).toBeLessThan(2 * 1024 * 1024);
      // 300,000 kept objects with their strings: well over 10 MB.
      expect(third.heapUsed - second.heapUsed).toBeGreaterThan(10 * 1024 * 1024);
      expect(third.rss).toBeGreaterThan(0);
    } finally {
      child.kill();
    }
  });
});
