import { Redis, type RedisOptions } from 'ioredis';

/**
 * One connection per role (BullMQ's habit): `commands` for ordinary commands, `subscriber` for
 * pub/sub (a subscribed connection can do nothing else), and a fresh connection for each
 * blocking reader (XREADGROUP BLOCK would stall every other command sharing its socket).
 */
export interface RedisConnections {
  commands: Redis;
  subscriber: Redis;
  /** A new connection for a blocking reader; closed by `close()`. */
  blocking(name: string): Redis;
  close(): Promise<void>;
}

export function createRedisConnections(url: string, name: string): RedisConnections {
  const opened: Redis[] = [];
  const open = (role: string, extra: RedisOptions = {}): Redis => {
    const conn = new Redis(url, {
      connectionName: `${name}:${role}`,
      // A reconnect every 200 ms..2 s forever: Redis coming back must heal the process by itself.
      retryStrategy: (times) => Math.min(200 * times, 2000),
      // Commands issued while disconnected fail fast instead of piling up; callers that must not
      // lose data (the webhook queue) keep it themselves and retry.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      ...extra,
    });
    // Errors are reported through health/metrics and the callers; an unhandled 'error' event would crash.
    conn.on('error', () => {});
    opened.push(conn);
    return conn;
  };
  const commands = open('commands');
  const subscriber = open('subscriber', { enableOfflineQueue: true, maxRetriesPerRequest: null });
  return {
    commands,
    subscriber,
    blocking: (role) => open(role, { enableOfflineQueue: true, maxRetriesPerRequest: null }),
    async close() {
      await Promise.allSettled(opened.map((c) => c.quit().catch(() => c.disconnect())));
      for (const c of opened) c.disconnect();
    },
  };
}

/** Resolves once the connection is ready, or rejects after `timeoutMs` with a clear reason. */
export function waitForRedis(conn: Redis, timeoutMs: number): Promise<void> {
  if (conn.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError = '';
    const onError = (error: Error) => (lastError = error.message);
    const timer = setTimeout(() => {
      conn.off('ready', onReady);
      conn.off('error', onError);
      reject(new Error(`Redis did not answer within ${timeoutMs} ms${lastError ? ` (${lastError})` : ''}`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      conn.off('error', onError);
      resolve();
    };
    conn.once('ready', onReady);
    conn.on('error', onError);
  });
}
