#!/usr/bin/env node
import { Command } from 'commander';
import { registerApplyCommand } from './commands/apply.js';
import { registerCheckCommand } from './commands/check.js';
import { registerHashPasswordCommand } from './commands/hash-password.js';
import { registerPredicateCommand } from './commands/predicate.js';
import { registerStartCommands } from './commands/start.js';
import { registerExtraCommands } from './extra-commands.js';

const program = new Command()
  .name('outrigger')
  .description('A reverse-proxy sidecar adding GraphQL apps, API keys and webhooks to a RESTHeart-style backend')
  .showHelpAfterError();

registerStartCommands(program);
registerCheckCommand(program);
registerApplyCommand(program);
registerPredicateCommand(program);
registerHashPasswordCommand(program);
registerExtraCommands(program);

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`outrigger: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
