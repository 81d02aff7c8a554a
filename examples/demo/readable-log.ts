/**
 * The demo's log lines for a person at a terminal: `12:04:31 INFO  message`, one line per event,
 * instead of the JSON lines `outrigger start` writes for log collectors. Redaction has happened
 * before (pino applies it while building the JSON), so nothing secret reaches this formatter.
 *
 * Info lines are their message alone: Outrigger's messages already say in words what their
 * fields hold (the start summary is the sentence of its fields). Warnings, errors and debug
 * lines keep the fields the message does not already show, since those carry the reason.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** pino's own fields, shown as the time and the level or not at all. */
const OWN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);
const MAX_VALUE = 160;

/** One JSON log line as one readable line (a line that is not JSON is passed on as it is). */
export function readableLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof entry.level === 'number' ? (LEVELS[entry.level] ?? String(entry.level)) : String(entry.level ?? '');
  const at = typeof entry.time === 'string' || typeof entry.time === 'number' ? new Date(entry.time) : new Date();
  const clock = at.toTimeString().slice(0, 8);
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  const fields: string[] = [];
  if (entry.level !== 30) {
    for (const [key, value] of Object.entries(entry)) {
      if (OWN.has(key) || value === undefined) continue;
      let text = typeof value === 'string' ? value : JSON.stringify(value);
      if (message.includes(text)) continue;
      if (text.length > MAX_VALUE) text = `${text.slice(0, MAX_VALUE - 1)}…`;
      fields.push(`${key}=${text}`);
    }
  }
  return `${clock} ${level.padEnd(5)} ${message}${fields.length ? `  (${fields.join(', ')})` : ''}\n`;
}

/** A pino destination that writes readable lines to `out` (stdout by default). */
export function readableLogDestination(out: NodeJS.WritableStream = process.stdout): NodeJS.WritableStream {
  return {
    write(chunk: string | Uint8Array) {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      for (const line of text.split('\n')) if (line) out.write(readableLine(line));
      return true;
    },
  } as unknown as NodeJS.WritableStream;
}
