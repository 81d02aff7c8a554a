/**
 * The graceful shutdown, one sequence in one file (SPEC §2, DESIGN "Shutdown"), in the order a
 * Kubernetes sidecar needs. Times count from the first signal (t0):
 *
 *   t0                      readiness answers 503; requests are still served, each answer with
 *                           `Connection: close` so kept-alive clients reconnect elsewhere
 *   t0 + drainSeconds       stop accepting, close idle connections; end long-lived streams
 *                           (subscriptions) with a reconnect hint; the in-process worker takes no
 *                           more work and finishes its attempts in flight
 *   until t0 + timeoutSeconds  in-flight requests finish; what is left then is cut
 *   then                    the events the tee queued are written to Redis, the worker's last
 *                           acknowledgements land (an attempt not finished stays pending in the
 *                           stream's group and another worker reclaims it: none is lost), the
 *                           rest closes, and the process exits 0
 *
 * A second signal is handled by the caller (cli/commands/start.ts): it exits at once. Every
 * event the tee had written is in Redis by then, and a delivery cut short is reclaimed.
 */
import type { ShutdownConfig } from './config/shutdown-config.js';
import type { ListeningServer } from './http/server.js';
import type { Logger } from './observability/logger.js';
import type { Draining } from './util/draining.js';

export interface ShutdownParts {
  settings: Pick<ShutdownConfig, 'drainSeconds' | 'timeoutSeconds'>;
  /** Null in `outrigger worker`: nothing to take out of rotation, so no drain. */
  server: ListeningServer | null;
  draining: Draining;
  /** The webhook tee's queue (events observed, not yet in Redis). */
  events: { drain(timeoutMs: number): Promise<void> } | null;
  /** The in-process webhook worker. */
  worker: { stop(timeoutMs: number): Promise<void> } | null;
  /** Everything else, in the reverse order of its start (modules, stores, connections, Redis, tracing). */
  closeRest(): Promise<void>;
  logger: Logger;
}

/** Written to Redis even when the timeout is spent: an event is worth a second of the grace margin. */
const FLUSH_AT_LEAST_MS = 2000;
/** The worker's last acknowledgements; an attempt not done by then is left to be reclaimed. */
const WORKER_AT_LEAST_MS = 1000;

export async function runShutdown(parts: ShutdownParts): Promise<void> {
  const { settings, server, draining, events, worker, logger } = parts;
  const started = Date.now();
  const deadline = started + settings.timeoutSeconds * 1000;
  const left = () => Math.max(0, deadline - Date.now());

  draining.begin();
  if (server && settings.drainSeconds > 0) {
    server.beginDrain();
    logger.info(
      { drainSeconds: settings.drainSeconds, timeoutSeconds: settings.timeoutSeconds },
      `draining: readiness fails and answers carry Connection: close for ${settings.drainSeconds} s, then Outrigger stops accepting`,
    );
    await new Promise((resolve) => setTimeout(resolve, settings.drainSeconds * 1000));
  }

  // Stop accepting first, so nothing new starts while streams are ended and the worker halts.
  const requests = server?.drain(left()) ?? Promise.resolve({ forced: 0 });
  if (server) logger.info({ secondsLeft: left() / 1000 }, 'stopped accepting connections; finishing in-flight requests');
  const streams = draining.stopAccepting((error) => logger.error({ err: String(error) }, 'a stream did not end cleanly on shutdown'));
  const workerStopped = worker?.stop(Math.max(left(), WORKER_AT_LEAST_MS)).catch((error: unknown) => logger.error({ err: String(error) }, 'error while stopping the webhook worker'));

  const { forced } = await requests;
  if (forced) logger.warn({ forced, timeoutSeconds: settings.timeoutSeconds }, 'shutdown.timeoutSeconds ran out; cut the requests still in flight');
  await streams;

  // Only now: the requests that just finished may have queued events.
  await events?.drain(Math.max(left(), FLUSH_AT_LEAST_MS));
  await workerStopped;
  await parts.closeRest();
  logger.info({ tookMs: Date.now() - started }, 'Outrigger stopped');
}
