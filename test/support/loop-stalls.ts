import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What `watchLoopStalls().stop()` answers; every number in milliseconds. */
export interface LoopStalls {
  /** The longest stretch between two turns of the watch timer, in CPU time spent meanwhile. */
  maxCpuMs: number;
  /** The wall time of that same stretch (a busy machine lengthens it; the block does too). */
  maxCpuStallWallMs: number;
  /** The longest stretch in wall time, whatever it was made of. */
  maxWallMs: number;
  /** Event-loop delay (perf_hooks.monitorEventLoopDelay, the same as Outrigger's /_metrics gauge). */
  delayP99Ms: number;
  delayMaxMs: number;
  /** Turns of the watch timer seen. */
  turns: number;
}

/** CPU time of this thread where Node tells it (22.19+/24), else of the process, in ms. */
function cpuMs(): number {
  const threadCpu = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;
  const u = threadCpu ? threadCpu.call(process) : process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Watches this process's event loop for stalls (issue 40): the stretches between two turns of a
 * 1 ms timer. A stall is counted in two clocks. In wall time it is what a waiting client feels,
 * and a loaded machine lengthens it: a process the scheduler leaves waiting for a core does not
 * turn its loop either. In CPU time it is the work done between the two turns, which is the
 * block itself: a synchronous 300 ms computation costs 300 ms of CPU however busy the machine is,
 * while a process left off the cores spends next to none. So "no request blocks the loop" is
 * asserted on `maxCpuMs`, which holds on a loaded machine and fails when a request really holds
 * the loop; the wall-clock figures are reported beside it.
 *
 * Before Node 22.19 only the process's CPU time can be read, which adds V8's helper threads (the
 * concurrent parts of garbage collection) to a stall: a few milliseconds, an overstatement, never
 * an understatement, of the block.
 */
export function watchLoopStalls(): { stop(): LoopStalls } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let lastWall = performance.now();
  let lastCpu = cpuMs();
  const stalls: LoopStalls = { maxCpuMs: 0, maxCpuStallWallMs: 0, maxWallMs: 0, delayP99Ms: 0, delayMaxMs: 0, turns: 0 };
  const timer = setInterval(() => {
    const wall = performance.now();
    const cpu = cpuMs();
    const wallGap = wall - lastWall;
    const cpuGap = cpu - lastCpu;
    if (cpuGap > stalls.maxCpuMs) {
      stalls.maxCpuMs = cpuGap;
      stalls.maxCpuStallWallMs = wallGap;
    }
    stalls.maxWallMs = Math.max(stalls.maxWallMs, wallGap);
    stalls.turns++;
    lastWall = wall;
    lastCpu = cpu;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      histogram.disable();
      stalls.delayP99Ms = histogram.percentile(99) / 1e6;
      stalls.delayMaxMs = histogram.max / 1e6;
      return stalls;
    },
  };
}
