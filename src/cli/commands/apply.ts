import type { Command } from 'commander';
import { startOutrigger } from '../../app.js';
import { ValidationError } from '../../errors.js';
import { createLogger } from '../../observability/logger.js';
import { applySetupFile } from '../../setup/apply-setup.js';
import { loadConfigOrExit } from '../load-config-or-exit.js';

export function registerApplyCommand(program: Command): void {
  program
    .command('apply')
    .description('upsert the permissions, GraphQL apps and webhooks of a setup file (all or nothing)')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .requiredOption('-f, --file <setup>', 'the setup YAML file')
    .action(async (opts: { config: string; file: string }) => {
      const config = loadConfigOrExit(opts.config);
      const running = await startOutrigger(config, { serve: false, worker: false, bootstrap: false, logger: createLogger({ level: 'warn' }) });
      try {
        const summary = await applySetupFile(
          running.context,
          opts.file,
          running.modules.flatMap((m) => m.setupKinds ?? []),
        );
        for (const change of summary.changes) process.stdout.write(`${change.change.padEnd(9)} ${change.section}/${change.id}\n`);
        for (const warning of summary.warnings) process.stdout.write(`warning: ${warning}\n`);
        const { created, updated, unchanged } = summary.counts;
        process.stdout.write(`${opts.file}: ${created} created, ${updated} updated, ${unchanged} unchanged\n`);
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
        process.stderr.write(`${opts.file}: nothing applied; ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'}:\n${error.problems.join('\n')}\n`);
        process.exitCode = 1;
      } finally {
        await running.stop();
      }
    });
}
