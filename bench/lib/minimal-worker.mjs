/**
 * Starts the minimal webhook worker (servers/minimal-worker.mjs), the pipeline's baseline, on a
 * proxy's stream, delivering to `targetUrl`. Returns what the drains need: its pid (for CPU),
 * its log and a stop.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnProcess } from './processes.mjs';

export const MINIMAL_WORKER = resolve(fileURLToPath(new URL('../servers/minimal-worker.mjs', import.meta.url)));

/** `nodeArgs`: Node/V8 flags before the script (e.g. --cpu-prof, to profile the floor beside Outrigger's worker). */
export function startMinimalWorker({ redisUrl, streamKey, targetUrl, log, nodeArgs = [] }) {
  const proc = spawnProcess('minimal worker', process.execPath, [...nodeArgs, MINIMAL_WORKER, '--redis', redisUrl, '--stream', streamKey, '--target', targetUrl], { log });
  return { pid: proc.pid, log, stop: () => proc.stop() };
}
