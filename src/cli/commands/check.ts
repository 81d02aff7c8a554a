import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../../config/load.js';
import { ValidationError } from '../../errors.js';
import { applySetup, readSetupFile } from '../../setup/apply-setup.js';
import { offlineSetupKinds } from '../../offline-setup-kinds.js';

export function registerCheckCommand(program: Command): void {
  program
    .command('check')
    .description('validate the config (and its acl.bootstrap setup file); prints every problem as `path: problem`')
    .requiredOption('-c, --config <file>', 'the YAML config file')
    .action(async (opts: { config: string }) => {
      const problems: string[] = [];
      const warnings: string[] = [];
      let bootstrap: string | null = null;
      try {
        const { config } = loadConfig(opts.config);
        bootstrap = config.acl.bootstrap;
        if (config.shutdown.deprecation) warnings.push(`warning: ${config.shutdown.deprecation}`);
        if (bootstrap) {
          try {
            const summary = await applySetup(readSetupFile(bootstrap), offlineSetupKinds(config), { offline: true });
            warnings.push(...summary.warnings.map((w) => `acl.bootstrap(${bootstrap}): warning: ${w}`));
          } catch (error) {
            if (!(error instanceof ValidationError)) throw error;
            problems.push(...error.problems.map((p) => `acl.bootstrap(${bootstrap}): ${p}`));
          }
        }
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        problems.push(...error.problems);
      }
      if (problems.length) {
        process.stderr.write(`${opts.config}: ${problems.length} problem${problems.length === 1 ? '' : 's'} found\n${problems.join('\n')}\n`);
        process.exitCode = 1;
        return;
      }
      if (warnings.length) process.stdout.write(`${warnings.join('\n')}\n`);
      process.stdout.write(`${opts.config}: OK${bootstrap ? ` (bootstrap ${bootstrap}: OK)` : ''}\n`);
    });
}
