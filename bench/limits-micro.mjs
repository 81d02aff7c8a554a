#!/usr/bin/env node
/**
 * What one `by: key` rate limit adds to a covered request, in isolation (issue 35, SPEC §10):
 * the limiter's step on the request chain (policy match, the allowance taken from the held
 * slice, usage counted, the two RateLimit headers built) and the answer's head written with them
 * on a real ServerResponse (as the forwarder writes it), against the same loop without a policy. A real redis-server answers the leases (one per 500,000 requests here).
 * Loaded machines move ns figures; read the difference beside the pass-through's ~55 µs/request.
 *
 *   npm run build && node bench/limits-micro.mjs [--iterations 1000000] [--rounds 3]
 */
import { mkdirSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startRedis } from './lib/redis.mjs';
import { stopAllOnExit } from './lib/processes.mjs';

const { values: opts } = parseArgs({ options: { iterations: { type: 'string', default: '1000000' }, rounds: { type: 'string', default: '3' } } });
const iterations = Number(opts.iterations);
stopAllOnExit();
const work = resolve('bench/.work', `limits-micro-${new Date().toISOString().replace(/[:.]/g, '-')}`);
mkdirSync(work, { recursive: true });

const { RateLimiter } = await import('../dist/src/limits/limiter.js');
const { RequestScope } = await import('../dist/src/http/scope.js');
const { exchangeForScope } = await import('../dist/src/chain/exchange.js');
const { createMetrics } = await import('../dist/src/observability/metrics.js');
const { createLogger } = await import('../dist/src/observability/logger.js');
const { redisKeys } = await import('../dist/src/store/keys.js');

const redis = await startRedis(work);
const limiter = new RateLimiter({
  config: {
    policies: [{ name: 'per-key', by: 'key', limit: 10_000_000, window: { seconds: 60 }, condition: null, roles: null, units: 'requests' }],
    headers: process.env.LIMITS_HEADERS !== '0',
    onRedisUnavailable: 'local',
  },
  redis: redis.client,
  keys: redisKeys('outrigger', 'limits-micro'),
  metrics: createMetrics(),
  logger: createLogger({ level: 'silent' }),
  adminPrefix: '/_admin',
  exchangeFor: exchangeForScope,
});
const principal = Object.freeze({ id: 'alice', roles: Object.freeze(['reader']), via: 'apikey', keyId: 'k1', verifiedLocally: true, keyLimits: undefined });
const socket = new Socket();
const req = new IncomingMessage(socket);
req.method = 'GET';
req.url = '/data/item';

/** Then the answer's head as the forwarder writes it: the upstream's headers in one object, plus ours. */
function head(res, scope) {
  const headers = { 'content-type': 'application/json', 'content-length': '1024', date: 'Sat, 28 Nov 2026 11:00:00 GMT', 'x-request-id': scope.id };
  if (scope.rateLimitHeaders) Object.assign(headers, scope.rateLimitHeaders);
  res.writeHead(200, headers);
}

function request(withLimits) {
  const res = new ServerResponse(req);
  const scope = new RequestScope(req, res, '127.0.0.1', false);
  scope.principal = principal;
  if (withLimits) {
    const pending = limiter.check(scope);
    if (pending) return pending.then(() => head(res, scope));
  }
  head(res, scope);
  return undefined;
}

// The first request leases (awaited); afterwards every one must be synchronous.
await request(true);
let awaited = 0;
const results = { without: [], with: [] };
for (let round = 0; round < Number(opts.rounds); round++) {
  for (const side of round % 2 ? ['with', 'without'] : ['without', 'with']) {
    const started = process.cpuUsage();
    for (let i = 0; i < iterations; i++) {
      const pending = request(side === 'with');
      if (pending) {
        awaited++;
        await pending;
      }
    }
    const used = process.cpuUsage(started);
    results[side].push(((used.user + used.system) * 1000) / iterations);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const w = median(results.with);
const wo = median(results.without);
process.stdout.write(
  `limits-micro: ${iterations} requests × ${opts.rounds} rounds; CPU per request (median): without ${wo.toFixed(0)} ns, with one by: key policy ${w.toFixed(0)} ns, ` +
    `difference ${(w - wo).toFixed(0)} ns; leases ${limiter.sharing.leases}; requests that awaited a lease ${awaited}\n`,
);
await limiter.stop();
await redis.stop();
process.exit(0);
