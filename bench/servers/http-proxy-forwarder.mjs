/**
 * A peer of the pass-through (issue 14): the reverse proxy as many Node users build it with
 * `http-proxy` (node-http-proxy), configured as commonly recommended for production: a
 * keep-alive `http.Agent` to the upstream (without it every request opens a new connection),
 * `xfwd` for the X-Forwarded-* headers, errors answered 502. Streams both ways, like the others.
 * Usage: UPSTREAM=http://127.0.0.1:PORT node http-proxy-forwarder.mjs
 */
import { Agent, createServer } from 'node:http';
import httpProxy from 'http-proxy';
import { countingServer } from './ipc.mjs';

const agent = new Agent({ keepAlive: true, maxSockets: 128, keepAliveMsecs: 30_000 });
const proxy = httpProxy.createProxyServer({ target: process.env.UPSTREAM, agent, xfwd: true });
proxy.on('error', (error, req, res) => {
  if (res.headersSent) res.destroy(error);
  else res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream error: ${error.code ?? error.message}`);
});

const server = createServer((req, res) => proxy.web(req, res));
countingServer(server);
process.on('SIGTERM', () => process.exit(0));
