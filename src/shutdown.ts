/**
 * The graceful shutdown, one sequence in one file (SPEC §2, DESIGN "Shutdown"), in the order a
 * Kubernetes sidecar needs. Times count from the first signal (t0):
 *
 *   t0                      readiness answers 503; requests are still served, each answer with
 *                           `Connection: close` so kept-alive clients reconnect elsewhere
 *   t0 + drainSeconds       stop accepting, close idle connections; end long-lived streams
 *                           (subscriptions) with a reconnect hint; the in-process worker takes no
 *                           more work and finishes its attempts in flight (FeatureModule.stopAccepting)
 *   until t0 + timeoutSeconds  in-flight requests finish; what is left then is cut
 *   then                    the events the tee queued are written to Redis (FeatureModule.flush),
 *                           the worker's last acknowledgements land (an attempt not finished stays
 *                           pending in the stream's group and another worker reclaims it: none is
 *                           lost), the rest closes, and the process exits 0
 *
 * A second signal is handled by the caller (cli/commands/start.ts): it exits at once. Every
 * event the tee had written is in Redis by then, and a delivery cut short is reclaimed.
 *
 * `beginDrain` is the first step alone (SIGUSR2): a native sidecar's preStop hook runs when the
 * Pod starts terminating, while its SIGTERM comes only after the backend has exited, so the
 * drain starts early and the SIGTERM then skips the part of it already spent.
 *
 * The sequence names no feature: each step a feature takes part in is a FeatureModule hook
 * (the webhooks feature implements them for its worker and its tee).
 */
import type { UserVerifier } from './access/users/user-verifier.js';
import type { AppContext } from './app-context.js';
import type { ShutdownConfig } from './config/shutdown-config.js';
import type { FeatureModule } from './feature-module.js';
import type { FeatureStates } from './features/feature-states.js';
import type { ListeningServer } from './http/server.js';
import type { RateLimiter } from './limits/limiter.js';
import type { Logger } from './observability/logger.js';
import type { Tracing } from './observability/tracing/tracing.js';
import type { Forwarder } from './proxy/forwarder.js';
import type { startBootstrap } from './setup/bootstrap.js';
import type { EmbeddedRedis } from './store/embedded-redis.js';
import type { RedisReadiness } from './store/redis-readiness.js';
import type { Draining } from './util/draining.js';

export interface ShutdownParts {
  settings: Pick<ShutdownConfig, 'drainSeconds' | 'timeoutSeconds'>;
  /** Null in `outrigger worker`: nothing to take out of rotation, so no drain. */
  server: ListeningServer | null;
  draining: Draining;
  /** The feature modules, whose `stopAccepting` and `flush` hooks are the sequence's steps of the same names. */
  modules: ReadonlyArray<Pick<FeatureModule, 'name' | 'stopAccepting' | 'flush'>>;
  /** Everything else, in the reverse order of its start (modules, stores, connections, Redis, tracing). */
  closeRest(): Promise<void>;
  logger: Logger;
}

/**
 * The flush may run past the timeout by this much: the examples' grace periods leave 5 s after
 * `shutdown.timeoutSeconds` for it, and an event waiting for Redis to come back is worth them.
 */
const FLUSH_MARGIN_MS = 4000;
/**
 * Closing the rest (Redis connections among them) gets what is left of the timeout and at least
 * this: a QUIT to a Redis that is down can wait for a reconnect that never comes, and the
 * process must end inside the grace period all the same (it exits 0: nothing is lost by then).
 */
const CLOSE_AT_LEAST_MS = 1000;
/** A feature's last acknowledgements (the worker's); an attempt not done by then is left to be reclaimed. */
const STOP_ACCEPTING_AT_LEAST_MS = 1000;

/** Readiness fails and answers carry `Connection: close` from now on; requests are still served. */
export function beginDrain(parts: Pick<ShutdownParts, 'server' | 'draining'>): void {
  parts.draining.begin();
  parts.server?.beginDrain();
}

export async function runShutdown(parts: ShutdownParts): Promise<void> {
  const { settings, server, draining, modules, logger } = parts;
  const started = Date.now();
  const deadline = started + settings.timeoutSeconds * 1000;
  const left = () => Math.max(0, deadline - Date.now());

  // What an earlier beginDrain (a preStop hook) already spent of the drain is not waited again.
  const drainLeftMs = Math.max(0, settings.drainSeconds * 1000 - draining.elapsedMs());
  beginDrain(parts);
  if (server && drainLeftMs > 0) {
    logger.info(
      { drainSeconds: settings.drainSeconds, timeoutSeconds: settings.timeoutSeconds, drainLeftMs },
      `draining: readiness fails and answers carry Connection: close for ${drainLeftMs / 1000} s more, then Outrigger stops accepting`,
    );
    await new Promise((resolve) => setTimeout(resolve, drainLeftMs));
  }

  // Stop accepting first, so nothing new starts while streams are ended and the worker halts.
  const requests = server?.drain(left()) ?? Promise.resolve({ forced: 0 });
  if (server) logger.info({ secondsLeft: left() / 1000 }, 'stopped accepting connections; finishing in-flight requests');
  const streams = draining.stopAccepting((error) => logger.error({ err: String(error) }, 'a stream did not end cleanly on shutdown'));
  const stoppedAccepting = Promise.all(
    modules.map((module) =>
      module
        .stopAccepting?.(Math.max(left(), STOP_ACCEPTING_AT_LEAST_MS))
        .catch((error: unknown) => logger.error({ feature: module.name, err: String(error) }, `error while stopping the ${module.name} feature's work`)),
    ),
  );

  const { forced } = await requests;
  if (forced) logger.warn({ forced, timeoutSeconds: settings.timeoutSeconds }, 'shutdown.timeoutSeconds ran out; cut the requests still in flight');
  await streams;

  // Only now: the requests that just finished may have queued events.
  const flushMs = left() + FLUSH_MARGIN_MS;
  await Promise.all(modules.map((module) => module.flush?.(flushMs)));
  await stoppedAccepting;
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([parts.closeRest().then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(left(), CLOSE_AT_LEAST_MS))))]);
  clearTimeout(timer);
  if (!closed) logger.warn('closing connections did not finish in time (Redis unreachable?); stopping without waiting for them');
  logger.info({ tookMs: Date.now() - started }, 'Outrigger stopped');
}

/** The parts the sequence does not name (app.ts starts them); closeRestInReverse closes them, its `closeRest`. */
export interface RestParts {
  bootstrap: Awaited<ReturnType<typeof startBootstrap>> | null;
  modules: FeatureModule[];
  permissions: AppContext['permissions'];
  features: FeatureStates;
  readiness: RedisReadiness;
  unwatchRedis: () => void;
  forwarder: Forwarder | null;
  userVerifier: (UserVerifier & { close?(): Promise<void> }) | null;
  limiter: RateLimiter | null;
  connections: AppContext['connections'];
  embedded: EmbeddedRedis | null;
  tracing: Tracing;
  logger: Logger;
}

/** Everything the shutdown sequence does not name, in the reverse order of its start. */
export async function closeRestInReverse(r: RestParts): Promise<void> {
  r.bootstrap?.stop();
  for (const module of [...r.modules].reverse()) await module.stop?.().catch((error: unknown) => r.logger.error({ err: String(error) }, 'error while stopping'));
  r.permissions.stop();
  r.features.stop();
  r.readiness.stop();
  r.unwatchRedis();
  await r.forwarder?.close().catch(() => {});
  await r.userVerifier?.close?.().catch(() => {});
  await r.limiter?.stop().catch(() => {});
  await r.connections.close();
  await r.embedded?.stop();
  await r.tracing.shutdown();
}
