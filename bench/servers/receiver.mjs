/**
 * The webhook receiver: answers every POST 200 at once and records, per delivery, the time from
 * the event's `timestamp` (set by the proxy when the response finished) to the moment the whole
 * delivery body has arrived here. Same machine, same clock; Date resolution is 1 ms.
 */
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { countingServer } from './ipc.mjs';

const MAX_SAMPLES = 500_000;
let latencies = [];
let count = 0;
let unparsable = 0;
let firstAt = 0;
let lastAt = 0;

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const at = performance.now();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
    let timestamp = NaN;
    try {
      timestamp = Date.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')).timestamp);
    } catch {
      /* counted below */
    }
    if (Number.isNaN(timestamp)) unparsable++;
    else if (latencies.length < MAX_SAMPLES) latencies.push(now - timestamp);
    if (count === 0) firstAt = at;
    lastAt = at;
    count++;
  });
});
server.keepAliveTimeout = 65_000;

countingServer(server, {
  stats: () => ({ count, unparsable, firstAt, lastAt, now: performance.now() }),
  latencies: () => ({ latencies }),
  reset: () => {
    latencies = [];
    count = 0;
    unparsable = 0;
    firstAt = 0;
    lastAt = 0;
    return {};
  },
});
