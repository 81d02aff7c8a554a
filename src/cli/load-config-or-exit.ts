import { ConfigError, loadConfig } from '../config/load.js';
import type { OutriggerConfig } from '../config/types.js';

/** Loads the config or prints every problem as `path: problem` and exits 1. */
export function loadConfigOrExit(file: string): OutriggerConfig {
  try {
    return loadConfig(file).config;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.file}: ${error.problems.length} problem${error.problems.length === 1 ? '' : 's'} found\n`);
      for (const problem of error.problems) process.stderr.write(`${problem}\n`);
      process.exit(1);
    }
    throw error;
  }
}
