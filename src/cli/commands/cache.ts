import type { Command } from 'commander';
import { loadConfigOrExit } from '../load-config-or-exit.js';
import { ALL, parseScope, scopeName } from '../../cache/cache-scope.js';
import { announceDrop, StrongGenerations } from '../../cache/invalidation-bus.js';
import { ChangeBus } from '../../store/change-bus.js';
import { describeTarget, openRedis, waitForRedis } from '../../store/connections.js';
import { redisKeys } from '../../store/keys.js';

/**
 * `outrigger cache purge [--collection db/coll]`: every running replica drops its cached reads
 * (all, or one collection's or db's), told through Redis as a write's drop is; with
 * `cache.consistency: strong` the generations in Redis move too, so no replica serves one again.
 */
export function registerCacheCommand(program: Command): void {
  const cache = program.command('cache').description("drop the response cache's entries on every running replica");
  cache
    .command('purge')
    .description("drop every cached read (or one collection's), on every replica, through Redis")
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option('--collection <db/coll>', 'only the reads of this collection (db/coll) or db (db)')
    .action(async (opts: { config: string; collection?: string }) => {
      const cfg = loadConfigOrExit(opts.config);
      const scope = opts.collection === undefined ? ALL : parseScope(opts.collection);
      if (typeof scope === 'string') {
        process.stderr.write(`--collection ${scope}\n`);
        process.exitCode = 1;
        return;
      }
      if (cfg.redis.url === 'embedded') {
        process.stderr.write(
          `${opts.config}: redis.url is "embedded", a private redis-server of a running Outrigger that this command cannot reach; use the admin API (DELETE ${cfg.routes.admin}/cache) instead\n`,
        );
        process.exitCode = 1;
        return;
      }
      const redis = openRedis(cfg.redis, 'outrigger:cache-cli', { offlineQueue: true, maxRetriesPerRequest: 1, attempts: 3 });
      redis.on('error', () => {});
      try {
        await waitForRedis(redis, 5000);
        const keys = redisKeys(cfg.redis.keyPrefix, cfg.service.id);
        if (cfg.cache.consistency === 'strong') await new StrongGenerations(redis, keys).bump(scope);
        // Only publishes (no subscription): every subscribed replica drops at once.
        await announceDrop(new ChangeBus(redis, redis, keys.cacheInvalidations), 'cli', scope);
        process.stdout.write(`purged ${scopeName(scope) === '*' ? 'every cached read' : scopeName(scope)} on every replica of ${cfg.service.id}\n`);
      } catch (error) {
        process.stderr.write(`cannot reach Redis at ${describeTarget(cfg.redis)}: ${(error as Error).message}\n`);
        process.exitCode = 1;
      } finally {
        redis.disconnect();
      }
    });
}
