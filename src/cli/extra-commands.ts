import type { Command } from 'commander';
import { registerKeysCommand } from '../keys/cli.js';

/** Commands contributed by features (e.g. `keys list|revoke`); registered here so index.ts stays a list. */
export function registerExtraCommands(program: Command): void {
  registerKeysCommand(program);
  void program;
}
