/**
 * The "minimal undici forwarder" baseline (notes §B config 4b): node:http in, one undici Pool out
 * through `pool.stream()`, bodies streamed both ways, hop-by-hop headers stripped both ways and
 * X-Forwarded-For/Proto/Host set. No auth, no routing, no observers: what any Node proxy pays.
 * Usage: UPSTREAM=http://127.0.0.1:PORT node undici-forwarder.mjs
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { countingServer } from './ipc.mjs';

const upstream = new URL(process.env.UPSTREAM);
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'expect',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
]);

function requestHeaders(req) {
  const raw = req.rawHeaders;
  const out = [];
  for (let i = 0; i < raw.length; i += 2) if (!HOP.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1]);
  out.push('x-forwarded-for', req.socket.remoteAddress ?? '', 'x-forwarded-proto', 'http');
  if (req.headers.host) out.push('x-forwarded-host', req.headers.host);
  return out;
}

const server = createServer((req, res) => {
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  pool.stream(
    { path: req.url, method: req.method, headers: requestHeaders(req), body: hasBody ? req : null },
    ({ statusCode, headers }) => {
      for (const name of Object.keys(headers)) if (HOP.has(name)) delete headers[name];
      res.writeHead(statusCode, headers);
      return res;
    },
    (error) => {
      if (!error) return;
      if (res.headersSent) res.destroy(error);
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream error: ${error.code ?? error.message}`);
    },
  );
});

countingServer(server);
// Exit through process.exit so that a `--cpu-prof` run writes its profile.
process.on('SIGTERM', () => process.exit(0));
