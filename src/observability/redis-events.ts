import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/**
 * Logs Redis going away and coming back, once per transition: ioredis reconnects quietly, and
 * an operator must be able to tell from the logs when (and for how long) Redis was missing.
 * Returns a function that stops watching (before a deliberate close, which is no outage).
 */
export function logRedisTransitions(conn: Redis, logger: Logger, redisUrl: string): () => void {
  let lostAt: number | null = conn.status === 'ready' ? null : Date.now();
  let lastError = '';
  const onError = (error: Error) => (lastError = error.message);
  const onClose = () => {
    if (lostAt !== null) return;
    lostAt = Date.now();
    logger.warn({ redis: redisUrl, err: lastError || undefined }, 'Redis connection lost; retrying in the background (known keys and cached documents keep working)');
  };
  const onReady = () => {
    if (lostAt === null) return;
    logger.info({ redis: redisUrl, downMs: Date.now() - lostAt }, 'Redis connection regained');
    lostAt = null;
    lastError = '';
  };
  conn.on('error', onError);
  conn.on('close', onClose);
  conn.on('ready', onReady);
  return () => {
    conn.off('error', onError);
    conn.off('close', onClose);
    conn.off('ready', onReady);
  };
}
