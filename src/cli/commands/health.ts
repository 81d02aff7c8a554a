import type { Command } from 'commander';
import { loadConfigOrExit } from '../load-config-or-exit.js';

/**
 * `outrigger health -c FILE`: the Dockerfile's HEALTHCHECK. The address comes from the same
 * config `start` uses (listen.host, listen.port, routes.health), so the two cannot disagree.
 */
export function registerHealthCommand(program: Command): void {
  program
    .command('health')
    .description('exit 0 when the Outrigger of this config answers its liveness route (used by the Dockerfile HEALTHCHECK)')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .option('--ready', 'check readiness (Redis reachable, config loaded) instead of liveness')
    .action(async (opts: { config: string; ready?: boolean }) => {
      const config = loadConfigOrExit(opts.config);
      const { host, port } = config.listen;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
      const url = `http://${shownHost}:${port}${config.routes.health}/${opts.ready ? 'ready' : 'live'}`;
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2500) });
        if (res.ok) {
          process.stdout.write(`${url}: ${res.status}\n`);
          return;
        }
        process.stderr.write(`${url}: ${res.status} ${await res.text()}\n`);
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
        process.stderr.write(`${url}: no answer (${cause}); is Outrigger running with this config (listen.port ${port})?\n`);
      }
      process.exitCode = 1;
    });
}
