/**
 * A peer of the pass-through (issue 14): fastify with `@fastify/http-proxy`, fastify's own
 * reverse proxy (on @fastify/reply-from, which forwards with undici), as its README configures
 * it: one `upstream`, every path forwarded. Logging off, like the other baselines.
 * Usage: UPSTREAM=http://127.0.0.1:PORT node fastify-proxy.mjs
 */
import Fastify from 'fastify';
import proxy from '@fastify/http-proxy';
import { serveCommands } from './ipc.mjs';

const app = Fastify({ logger: false });
await app.register(proxy, { upstream: process.env.UPSTREAM, http2: false });
await app.listen({ port: 0, host: '127.0.0.1' });
process.send?.({ ready: true, port: app.server.address().port });
serveCommands({});
process.on('SIGTERM', () => process.exit(0));
