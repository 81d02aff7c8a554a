import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../../src/store/embedded-redis.js';

/** A real redis-server for one test file, on a free port, that tests may stop and restart in place. */
export interface TestRedis {
  url: string;
  port: number;
  /** A plain client for assertions (MONITOR-free counting uses INFO commandstats). */
  client: Redis;
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
  /** Total commands processed so far (INFO stats), for "zero Redis calls" assertions. */
  commandsProcessed(): Promise<number>;
}

export async function startTestRedis(): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-test-redis-'));
  let server: EmbeddedRedis | null = await startEmbeddedRedis({ dir });
  const port = server.port;
  const client = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {});
  return {
    url: server.url,
    port,
    client,
    async stop() {
      await server?.stop();
      server = null;
    },
    async restart() {
      if (server) await server.stop();
      server = await startEmbeddedRedis({ dir, port });
    },
    async close() {
      client.disconnect();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async commandsProcessed() {
      const info = await client.info('stats');
      return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN);
    },
  };
}
