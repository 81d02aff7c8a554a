import type { AppContext } from '../app-context.js';
import { isRedisUnavailable } from '../store/redis-errors.js';
import { backoffMs } from '../util/backoff.js';
import { applySetup, applySetupFile, readSetupFile } from './apply-setup.js';
import type { SetupKind } from './setup-kind.js';

export interface Bootstrap {
  /** Settles once the file is applied (at once when Redis was up). */
  readonly applied: Promise<void>;
  stop(): void;
}

/**
 * `acl.bootstrap` at start. A file with problems stops the start at once, Redis or not (it is
 * validated without Redis first when Redis is away). With Redis unreachable Outrigger starts and
 * serves anyway, and applies the file when Redis answers: at its reconnection, and on a backoff
 * while an attempt still fails.
 */
export async function startBootstrap(context: AppContext, file: string, kinds: SetupKind[], offlineKinds: SetupKind[]): Promise<Bootstrap> {
  const { logger, redis } = context;
  const apply = async () => {
    const summary = await applySetupFile(context, file, kinds);
    logger.info({ file, ...summary.counts }, 'applied the bootstrap setup file');
  };

  if (redis.status === 'ready') {
    try {
      await apply();
      return { applied: Promise.resolve(), stop() {} };
    } catch (error) {
      if (!isRedisUnavailable(error)) throw error;
    }
  } else {
    await applySetup(readSetupFile(file), offlineKinds, { offline: true });
  }
  logger.warn({ file }, 'Redis is unreachable: serving without it; the bootstrap setup file will be applied once Redis is back');

  let stopped = false;
  let running = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let done!: () => void;
  const applied = new Promise<void>((resolve) => (done = resolve));
  const attempt = async () => {
    if (stopped || running) return;
    running = true;
    clearTimeout(timer);
    try {
      await apply();
      stopped = true;
      redis.off('ready', attempt);
      done();
    } catch (error) {
      if (!isRedisUnavailable(error)) {
        // Valid offline but refused against what Redis holds (e.g. a set-wide check): say so and stop trying.
        stopped = true;
        redis.off('ready', attempt);
        logger.error({ file, err: (error as Error).message }, 'the bootstrap setup file could not be applied');
        return;
      }
      timer = setTimeout(() => void attempt(), backoffMs(failures++, 1000, 30_000));
      timer.unref();
    } finally {
      running = false;
    }
  };
  redis.on('ready', attempt);
  timer = setTimeout(() => void attempt(), 1000);
  timer.unref();
  return {
    applied,
    stop() {
      stopped = true;
      clearTimeout(timer);
      redis.off('ready', attempt);
    },
  };
}
