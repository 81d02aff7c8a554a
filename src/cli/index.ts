#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerApplyCommand } from './commands/apply.js';
import { registerCacheCommand } from './commands/cache.js';
import { registerCheckCommand } from './commands/check.js';
import { registerConfigCommand } from './commands/config.js';
import { registerHashPasswordCommand } from './commands/hash-password.js';
import { registerHealthCommand } from './commands/health.js';
import { registerKeysCommand } from './commands/keys.js';
import { registerPredicateCommand } from './commands/predicate.js';
import { registerStartCommands } from './commands/start.js';

const program = new Command()
  .name('outrigger')
  .description('A reverse-proxy sidecar adding GraphQL apps, API keys and webhooks to a RESTHeart-style backend')
  .version(packageVersion(), '-V, --version', 'print the version of Outrigger')
  .showHelpAfterError();

registerStartCommands(program);
registerCheckCommand(program);
registerConfigCommand(program);
registerApplyCommand(program);
registerPredicateCommand(program);
registerHashPasswordCommand(program);
registerHealthCommand(program);
registerKeysCommand(program);
registerCacheCommand(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`outrigger: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

/** The version in package.json, which sits three levels above dist/src/cli (and src/cli in tests). */
function packageVersion(): string {
  for (const up of ['../../../package.json', '../../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // not this level
    }
  }
  return 'unknown';
}
