import { format } from 'node:util';
import type { Logger } from './logger.js';

type ConsoleMethod = 'log' | 'info' | 'debug' | 'trace' | 'warn' | 'error';
const CONSOLE_LEVELS: Record<ConsoleMethod, 'info' | 'debug' | 'warn' | 'error'> = { log: 'info', info: 'info', debug: 'debug', trace: 'debug', warn: 'warn', error: 'error' };

/**
 * SPEC §15: every line a running Outrigger writes is JSON, a dependency's stack trace included.
 * What Node and libraries would otherwise print as several plain lines goes through the logger
 * as one line with the stack in a field (`err.stack`, `warning.stack`): process warnings (Node's
 * own printer is a 'warning' listener installed at startup, replaced here), an exception or a
 * rejection nothing caught (logged at fatal, then the process exits 1 as Node's default does:
 * its state is unknown, and a supervisor restarts it), and a library's `console.*` calls.
 * For the long-running commands only (`start`, `worker`): the others print for a person.
 */
export function routeProcessOutput(logger: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    logger.warn({ warning: { name: warning.name, code: warning.code, message: warning.message, stack: warning.stack } }, `Node.js warning: ${warning.name}: ${warning.message}`);
  });
  process.on('uncaughtException', (error: unknown, origin: string) => {
    const what = origin === 'unhandledRejection' ? 'a promise rejection nothing handled' : 'an exception nothing caught';
    logger.fatal({ err: error, origin }, `${what}, exiting: ${error instanceof Error ? error.message : format(error)}`);
    process.exit(1);
  });
  for (const method of Object.keys(CONSOLE_LEVELS) as ConsoleMethod[]) {
    const level = CONSOLE_LEVELS[method];
    console[method] = (...args: unknown[]) => {
      const error = args.find((a): a is Error => a instanceof Error);
      const rest = args.filter((a) => a !== error);
      const message = rest.length > 0 ? format(...rest) : (error?.message ?? '');
      logger[level]({ source: `console.${method}`, ...(error ? { err: error } : {}) }, message);
    };
  }
}
