import type { Command } from 'commander';
import { loadConfigOrExit } from '../load-config-or-exit.js';
import type { OutriggerConfig } from '../../config/types.js';
import { createLogger } from '../../observability/logger.js';
import { ChangeBus } from '../../store/change-bus.js';
import { describeTarget, openRedis, waitForRedis } from '../../store/connections.js';
import { redisKeys } from '../../store/keys.js';
import { newestFirst } from '../../keys/key-record.js';
import { ApiKeyIssuer } from '../../keys/issuer.js';
import { ApiKeyStore, type StoredKey } from '../../keys/key-store.js';

/** `outrigger keys list|revoke`: admin operations straight against Redis (no running Outrigger needed). */
export function registerKeysCommand(program: Command): void {
  const keys = program.command('keys').description("list or revoke the service's API keys, straight in Redis");

  keys
    .command('list')
    .description('list every API key of the service (never the keys themselves)')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option('--owner <id>', 'only the keys of this user')
    .option('--client <name>', 'only the keys issued to this agent client')
    .option('--json', 'print JSON (one array) instead of a table')
    .action(async (opts: { config: string; owner?: string; client?: string; json?: boolean }) => {
      await withStore(opts.config, async ({ store }) => {
        const now = Date.now();
        const listed = (await store.listAll())
          .filter((k) => (opts.owner === undefined || k.record.owner === opts.owner) && (opts.client === undefined || k.record.client === opts.client))
          .sort((a, b) => newestFirst(a.record, b.record));
        if (opts.json) {
          process.stdout.write(
            `${JSON.stringify(
              listed.map((k) => jsonRow(k)),
              null,
              2,
            )}\n`,
          );
          return;
        }
        if (listed.length) process.stdout.write(`${table(listed, now)}\n`);
        const expired = listed.filter((k) => k.record.expiresAt <= now).length;
        const filters = [opts.owner !== undefined ? `owner ${opts.owner}` : '', opts.client !== undefined ? `client ${opts.client}` : ''].filter(Boolean).join(', ');
        process.stdout.write(`${listed.length} key${listed.length === 1 ? '' : 's'}${filters ? ` (${filters})` : ''}: ${listed.length - expired} active, ${expired} expired\n`);
      });
    });

  keys
    .command('revoke')
    .description('revoke (delete) an API key; every running Outrigger refuses it within a second')
    .argument('<id>', 'the key id (_id), as `keys list` shows it')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .action(async (id: string, opts: { config: string }) => {
      await withStore(opts.config, async ({ issuer }) => {
        const record = await issuer.revoke(id, { actor: 'outrigger keys revoke' });
        if (!record) {
          process.stderr.write(`no key ${JSON.stringify(id)} on service ${JSON.stringify(config(opts.config).service.id)}; see \`outrigger keys list -c ${opts.config}\`\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(`revoked key ${record._id} (${JSON.stringify(record.name)} of ${record.owner})\n`);
      });
    });
}

const loaded = new Map<string, OutriggerConfig>();
function config(file: string): OutriggerConfig {
  let c = loaded.get(file);
  if (!c) loaded.set(file, (c = loadConfigOrExit(file)));
  return c;
}

async function withStore(file: string, work: (parts: { store: ApiKeyStore; issuer: ApiKeyIssuer }) => Promise<void>): Promise<void> {
  const cfg = config(file);
  if (cfg.redis.url === 'embedded') {
    process.stderr.write(
      `${file}: redis.url is "embedded", a private redis-server of a running Outrigger that this command cannot reach; use the admin API (GET/DELETE ${cfg.routes.admin}/keys) instead\n`,
    );
    process.exitCode = 1;
    return;
  }
  // A few quick retries, then give up: a command-line tool should say so rather than hang.
  const redis = openRedis(cfg.redis, 'outrigger:keys-cli', { offlineQueue: true, maxRetriesPerRequest: 1, attempts: 3 });
  let lastError = '';
  redis.on('error', (error: Error) => (lastError = error.message));
  try {
    try {
      await Promise.race([waitForRedis(redis, 5000), new Promise<never>((_, reject) => redis.once('end', () => reject(new Error(`gave up after 4 attempts${lastError ? ` (${lastError})` : ''}`))))]);
    } catch (error) {
      process.stderr.write(`cannot reach Redis at ${describeTarget(cfg.redis)}: ${(error as Error).message}\n`);
      process.exitCode = 1;
      return;
    }
    const keys = redisKeys(cfg.redis.keyPrefix, cfg.service.id);
    const store = new ApiKeyStore(redis, keys);
    // Only publishes (no subscription): running replicas evict a revoked key at once.
    const bus = new ChangeBus(redis, redis, keys.changes);
    const issuer = new ApiKeyIssuer(store, bus, { prefix: cfg.apiKeys.prefix, serviceId: cfg.service.id }, createLogger({ level: 'silent' }));
    await work({ store, issuer });
  } finally {
    redis.disconnect();
  }
}

const iso = (ms: number | undefined) => (ms === undefined ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z'));

function jsonRow({ record, lastUsedAt }: StoredKey): Record<string, unknown> {
  const row: Record<string, unknown> = { _id: record._id, owner: record.owner, name: record.name, roles: record.roles, via: record.via };
  if (record.client !== undefined) row.client = record.client;
  if (record.kind !== undefined) row.kind = record.kind;
  row.createdAt = iso(record.createdAt);
  row.expiresAt = iso(record.expiresAt);
  if (lastUsedAt !== undefined) row.lastUsedAt = iso(lastUsedAt);
  return row;
}

function table(rows: StoredKey[], now: number): string {
  const header = ['ID', 'OWNER', 'NAME', 'ROLES', 'VIA', 'CLIENT', 'CREATED', 'EXPIRES', 'LAST USED', 'STATUS'];
  const cells = rows.map(({ record, lastUsedAt }) => [
    record._id,
    record.owner,
    record.name.replace(/\s+/g, ' '),
    record.roles.join(',') || '-',
    record.kind === 'token' ? `${record.via} (token)` : record.via,
    record.client ?? '-',
    iso(record.createdAt),
    iso(record.expiresAt),
    iso(lastUsedAt),
    record.expiresAt <= now ? 'expired' : 'active',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  return [header, ...cells]
    .map((line) =>
      line
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
