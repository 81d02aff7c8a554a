import type { Command } from 'commander';

/** Commands contributed by features (e.g. `keys list|revoke`); registered here so index.ts stays a list. */
export function registerExtraCommands(program: Command): void {
  // command: keys
  void program;
}
