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
      formatters: { log: boundedStrings },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    (options.destination ?? process.stdout) as pino.DestinationStream,
  );
}

/** The longest string a log line keeps in any field; the rest is cut and counted. */
export const MAX_LOGGED_STRING = 2048;

/**
 * Log lines are bounded (issue 34): a field that carries request bytes (an upstream error naming
 * headers, a path, a header value) is cut at MAX_LOGGED_STRING characters, down to three levels
 * of nesting, so one request cannot write a 15 KB line per attempt. The object is copied only
 * when something is cut (the caller's objects, such as `req.headers`, are never changed).
 */
export function boundedStrings(object: Record<string, unknown>): Record<string, unknown> {
  return bound(object, 0) as Record<string, unknown>;
}

function bound(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return value.length > MAX_LOGGED_STRING ? `${value.slice(0, MAX_LOGGED_STRING)}… [${value.length - MAX_LOGGED_STRING} more characters]` : value;
  if (depth >= 3 || value === null || typeof value !== 'object' || value instanceof Error) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const b = bound(value[i], depth + 1);
      if (b !== value[i]) (copy ??= [...value])[i] = b;
    }
    return copy ?? value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  let copy: Record<string, unknown> | null = null;
  for (const key in value) {
    const v = (value as Record<string, unknown>)[key];
    const b = bound(v, depth + 1);
    if (b !== v) (copy ??= { ...(value as Record<string, unknown>) })[key] = b;
  }
  return copy ?? value;
}
