// The webhook pipeline's two measurements, shared by bench/run.mjs and bench/worker-ab.mjs: a
// drain (fill the stream with the worker off, then time a worker emptying it) and delivery
// latency at a paced rate with the worker running.
import { runLoad } from './load.mjs';
import { runPaced } from './paced.mjs';
import { cpuMicros, sleep } from './processes.mjs';
import { commandCounters, commandDelta, streamEvents } from './redis.mjs';

export async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * One drain round. `fill` sends `amount` requests through a proxy that tees each into
 * `streamKey` (no worker running); then `startWorker()` starts one, and the round is timed from
 * the delivery after the warm-up ones, so neither the worker's start-up nor V8 compiling its
 * code (the first second or so of a drain lasting a few) is counted.
 */
export async function measureDrain({ receiver, redis, streamKey, url, headers, connections, amount, warmupEvents, startWorker, deadlineMs = 180_000 }) {
  await receiver.ask('reset');
  const fill = await runLoad({ url, headers, connections, amount });
  // Under heavy load a few requests may time out: drain what the proxy answered.
  const events = fill.ok;
  await until(async () => (await streamEvents(redis.client, streamKey, events)) >= events, 60_000, 'the proxy to write every event to the stream');
  await sleep(300); // the proxy's last flush and pollers settle
  const before = await commandCounters(redis.client);
  const redisCpu0 = cpuMicros(redis.pid);
  const worker = await startWorker();
  let first = null;
  const deadline = Date.now() + deadlineMs;
  const warmup = Math.min(warmupEvents, Math.floor(events / 2));
  for (;;) {
    const s = await receiver.ask('stats');
    if (!first && s.count > warmup) first = { count: s.count, cpu: cpuMicros(worker.pid), at: s.lastAt };
    if (s.count >= events) break;
    if (Date.now() > deadline) throw new Error(`the worker delivered ${s.count} of ${events} events within ${deadlineMs / 1000} s; see ${worker.log}`);
    await sleep(50);
  }
  const s = await receiver.ask('stats');
  const workerCpu = cpuMicros(worker.pid) - first.cpu;
  // Acknowledgements follow deliveries: wait for the stream to be emptied before counting commands.
  await until(async () => (await redis.client.xlen(streamKey)) === 0, 30_000, 'the worker to acknowledge every event');
  const delta = commandDelta(before, await commandCounters(redis.client));
  const redisCpu = cpuMicros(redis.pid) - redisCpu0;
  await worker.stop();
  await redis.client.xtrim(streamKey, 'MAXLEN', 0);
  const measured = s.count - first.count;
  return {
    events,
    delivered: s.count,
    warmupEvents: first.count,
    fillReqPerSec: fill.reqPerSec,
    eventsPerSec: measured / ((s.lastAt - first.at) / 1000),
    workerCpuMicrosPerEvent: workerCpu / measured,
    redisCpuMicrosPerEvent: redisCpu / s.count,
    redisCommandsPerEvent: delta.total / s.count,
    redisCommands: delta.perCommand,
    perCommand: Object.fromEntries(Object.entries(delta.perCommand).map(([k, v]) => [k, +(v / s.count).toFixed(3)])),
    unparsable: s.unparsable,
  };
}

/** Delivery latency (request answered → webhook received) at a paced `rate` for `seconds`, the worker running. */
export async function measureDeliveryLatency({ receiver, url, headers, rate, seconds }) {
  await receiver.ask('reset');
  const load = await runPaced({ url, headers, connections: 20, rate, seconds });
  await until(async () => (await receiver.ask('stats')).count >= load.ok, 60_000, 'every event to be delivered');
  const { latencies } = await receiver.ask('latencies');
  latencies.sort((a, b) => a - b);
  const pick = (p) => latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))];
  return { offeredRate: rate, requests: load.ok, delivered: latencies.length, p50: pick(50), p99: pick(99), max: latencies[latencies.length - 1] };
}
