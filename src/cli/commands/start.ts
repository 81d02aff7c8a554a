import type { Command } from 'commander';
import { startOutrigger, type RunningOutrigger } from '../../app.js';
import { OutriggerError } from '../../errors.js';
import { ListenError } from '../../http/server.js';
import { ConfigReloader } from '../../reload.js';
import { loadConfigOrExit } from '../load-config-or-exit.js';
import { createLogger, type Logger } from '../../observability/logger.js';
import { routeProcessOutput } from '../../observability/process-output.js';

export function registerStartCommands(program: Command): void {
  program
    .command('start')
    .description('run the proxy and, unless --no-worker, an in-process webhook worker')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option('--no-worker', 'do not deliver webhooks in this process (run `outrigger worker` separately)')
    .option(CONFIG_POLL_FLAG, CONFIG_POLL_HELP, '5')
    .action(async (opts: { config: string; worker: boolean; configPoll: string }) => {
      const pollMs = configPollMs(opts.configPoll);
      const config = loadConfigOrExit(opts.config);
      const logger = createLogger({ level: config.log.level, secretHeaders: config.log.secretHeaders });
      routeProcessOutput(logger);
      // The handlers first: a signal that comes while Outrigger starts (a Pod deleted at once) is
      // taken when the start is done, not answered by Node's default, which ends the process.
      const started = startOutrigger(config, { worker: opts.worker, logger });
      stopOnSignals(async () => (await started).stop(), logger);
      drainOnSignal(
        () =>
          void started.then(
            (running) => running.beginDrain(),
            () => {},
          ),
        logger,
      );
      reloadOnSignal(started, { file: opts.config, pollMs, logger });
      await startedOrExit(started, logger);
    });

  program
    .command('worker')
    .description('run only the webhook worker (scale it separately from the proxy)')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option(CONFIG_POLL_FLAG, CONFIG_POLL_HELP, '5')
    .action(async (opts: { config: string; configPoll: string }) => {
      const pollMs = configPollMs(opts.configPoll);
      const config = loadConfigOrExit(opts.config);
      const logger = createLogger({ level: config.log.level, secretHeaders: config.log.secretHeaders });
      routeProcessOutput(logger);
      const started = startOutrigger(config, { worker: true, serve: false, logger });
      stopOnSignals(async () => (await started).stop(), logger);
      reloadOnSignal(started, { file: opts.config, pollMs, logger });
      await startedOrExit(started, logger);
    });
}

/**
 * A start that fails is logged as JSON like every other line, then exits 1. A port taken or a
 * refusal of Outrigger's own already names the setting to change: its message alone, no stack; anything
 * else keeps its stack in `err`.
 */
async function startedOrExit(started: Promise<unknown>, logger: Logger): Promise<void> {
  try {
    await started;
  } catch (error) {
    const named = error instanceof ListenError || error instanceof OutriggerError;
    logger.fatal(named ? {} : { err: error }, `Outrigger could not start: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}

/**
 * SIGUSR2: begin the drain without stopping (readiness 503, `Connection: close`), for a native
 * sidecar's preStop hook, which runs when the Pod starts terminating while the SIGTERM comes only
 * after the backend has exited (docs/kubernetes.md). The SIGTERM then skips the drain time spent.
 */
export function drainOnSignal(drain: () => void, logger: Logger): void {
  process.on('SIGUSR2', () => {
    logger.info({ signal: 'SIGUSR2' }, 'received SIGUSR2: draining (readiness fails, answers carry Connection: close) until SIGTERM');
    drain();
  });
}

/**
 * SIGTERM/SIGINT: run the shutdown sequence once (src/shutdown.ts: drain, then close) and exit 0.
 * A second signal exits at once, with 128 + the signal's number as a shell reports a killed
 * process (143 for SIGTERM, 130 for SIGINT): every webhook event the tee had written is in Redis
 * already (its stream is the queue), and an attempt cut short stays pending there until another
 * worker reclaims it. Logs as JSON, like every other line.
 */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, `received ${signal} again: exiting at once`);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    stopping = true;
    logger.info({ signal }, `received ${signal}: draining, then finishing in-flight requests (send it again to exit at once)`);
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: String(error) }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

const CONFIG_POLL_FLAG = '--config-poll <seconds>';
const CONFIG_POLL_HELP = 'how often to look whether the config file changed, to reload what can be without a restart (0: only on SIGHUP)';

/** `--config-poll`: seconds from 0 (off) to an hour, or exit 1 naming the problem. */
function configPollMs(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
    process.stderr.write(`--config-poll: must be a number of seconds from 0 (only SIGHUP reloads) to 3600 (got ${JSON.stringify(value)})\n`);
    process.exit(1);
  }
  return Math.round(seconds * 1000);
}

/**
 * SIGHUP, and a change of the file when polled: reload what can be without a restart
 * (src/reload.ts). The handler is set before the start is done, so a SIGHUP then is taken
 * (reloaded once started), not answered by Node's default, which ends the process.
 */
export function reloadOnSignal(started: Promise<RunningOutrigger>, parts: { file: string; pollMs: number; logger: Logger }): void {
  const reloader = started.then((running) => {
    const made = new ConfigReloader(running.context.config, parts.file, running.reloadables, parts.logger);
    if (parts.pollMs > 0) made.watch(parts.pollMs);
    return made;
  });
  reloader.catch(() => {});
  process.on('SIGHUP', () => {
    void reloader.then((r) => r.schedule('SIGHUP'));
  });
}
