import type { Command } from 'commander';
import { configJsonSchema } from '../../config/validate.js';

/** The text `outrigger config schema` prints, and docs/outrigger.schema.json holds (a test keeps them equal). */
export function configSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

export function registerConfigCommand(program: Command): void {
  const config = program.command('config').description('the configuration file itself');
  config
    .command('schema')
    .description('print the JSON Schema (draft 2020-12) of the config file, for editors: the same definitions `check` validates with')
    .action(() => {
      process.stdout.write(configSchemaText());
    });
}
