import type { Command } from 'commander';
import { startOutrigger } from '../../app.js';
import { loadConfigOrExit } from '../load-config-or-exit.js';
import type { Logger } from '../../observability/logger.js';

export function registerStartCommands(program: Command): void {
  program
    .command('start')
    .description('run the proxy and, unless --no-worker, an in-process webhook worker')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option('--no-worker', 'do not deliver webhooks in this process (run `outrigger worker` separately)')
    .action(async (opts: { config: string; worker: boolean }) => {
      const config = loadConfigOrExit(opts.config);
      const running = await startOutrigger(config, { worker: opts.worker });
      stopOnSignals(() => running.stop(), running.context.logger);
    });

  program
    .command('worker')
    .description('run only the webhook worker (scale it separately from the proxy)')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .action(async (opts: { config: string }) => {
      const config = loadConfigOrExit(opts.config);
      const running = await startOutrigger(config, { worker: true, serve: false });
      stopOnSignals(() => running.stop(), running.context.logger);
    });
}

/** SIGTERM/SIGINT: stop gracefully once and exit 0; a second signal exits at once. Logs as JSON, like every other line. */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, `received ${signal}: finishing in-flight requests, then stopping`);
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
