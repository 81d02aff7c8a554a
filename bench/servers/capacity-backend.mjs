/**
 * A backend with a capacity (issue 49's bench): `workers` requests are served at once, each taking
 * `serviceMs`; the rest wait inside it, first come first served, as a database pool does. "10 ×
 * slower" is `serviceMs` × 10: its capacity drops tenfold, and what it is sent beyond that queues
 * inside it. The bench sets both over IPC (`set`) and reads the most in flight (`peak`).
 */
import { createServer } from 'node:http';
import { countingServer } from './ipc.mjs';

const BODY = Buffer.from(JSON.stringify({ ok: true, pad: 'x'.repeat(200) }));
const HEADERS = { 'content-type': 'application/json', 'content-length': String(BODY.length) };
let workers = 16;
let serviceMs = 20;
let busy = 0;
let inside = 0;
let peak = 0;
const line = [];

function serve(res) {
  busy++;
  setTimeout(() => {
    busy--;
    inside--;
    if (!res.destroyed) {
      res.writeHead(200, HEADERS);
      res.end(BODY);
    }
    const next = line.shift();
    if (next) serve(next);
  }, serviceMs);
}

const server = createServer((req, res) => {
  req.resume();
  inside++;
  if (inside > peak) peak = inside;
  if (busy < workers) serve(res);
  else line.push(res);
});
server.keepAliveTimeout = 65_000;

countingServer(server, {
  set: (m) => {
    if (m.workers !== undefined) workers = m.workers;
    if (m.serviceMs !== undefined) serviceMs = m.serviceMs;
    return { workers, serviceMs };
  },
  peak: () => {
    const seen = peak;
    peak = inside;
    return { peak: seen };
  },
});
