import { pino, type Logger } from 'pino';

export type { Logger };

/** Header names whose values never reach a log line, whatever the level. */
export const ALWAYS_SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie'];

export function createLogger(options: { level: string; secretHeaders?: string[]; name?: string; destination?: NodeJS.WritableStream }): Logger {
  const headers = [...ALWAYS_SECRET_HEADERS, ...(options.secretHeaders ?? [])];
  const paths = headers.flatMap((h) => [`req.headers["${h}"]`, `res.headers["${h}"]`, `headers["${h}"]`]);
  return pino(
    {
      level: options.level,
      name: options.name ?? 'outrigger',
      redact: { paths: [...paths, 'password', '*.password', 'key', '*.key', 'secret', '*.secret'], censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    (options.destination ?? process.stdout) as pino.DestinationStream,
  );
}
