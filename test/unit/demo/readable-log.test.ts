import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readableLine } from '../../../examples/demo/readable-log.js';
import { createLogger } from '../../../src/observability/logger.js';
import { readableLogDestination } from '../../../examples/demo/readable-log.js';

const at = '2026-11-28T12:04:31.123Z';
const clock = new Date(at).toTimeString().slice(0, 8);

describe("the demo's readable log lines", () => {
  it('prints an info line as its time, level and message alone (the message says what the fields hold)', () => {
    const line = JSON.stringify({
      level: 30,
      time: at,
      pid: 7,
      name: 'outrigger',
      url: 'http://127.0.0.1:8080',
      features: { webhooks: 'enabled' },
      msg: 'Outrigger listening on http://127.0.0.1:8080',
    });
    expect(readableLine(line)).toBe(`${clock} INFO  Outrigger listening on http://127.0.0.1:8080\n`);
  });

  it('keeps the fields of a warning that the message does not show, shortened', () => {
    const line = JSON.stringify({ level: 40, time: at, pid: 7, name: 'outrigger', redis: 'redis://127.0.0.1:6379', err: 'x'.repeat(500), msg: 'Redis connection lost: redis://127.0.0.1:6379' });
    const out = readableLine(line);
    expect(out.startsWith(`${clock} WARN  Redis connection lost: redis://127.0.0.1:6379  (err=xxx`)).toBe(true);
    expect(out).not.toContain('redis=');
    expect(out).toMatch(/x…\)\n$/);
    expect(out.length).toBeLessThan(250);
  });

  it('passes a line that is not JSON through', () => {
    expect(readableLine('plain text')).toBe('plain text\n');
  });

  it('is a pino destination: redaction still applies before the formatting', () => {
    let written = '';
    const out = new Writable({ write: (chunk, _enc, done) => ((written += String(chunk)), done()) });
    const logger = createLogger({ level: 'info', destination: readableLogDestination(out) });
    logger.warn({ headers: { authorization: 'Basic c2VjcmV0' } }, 'a request');
    logger.info('second');
    const lines = written.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d WARN {2}a request {2}\(headers=\{"authorization":"\[redacted\]"\}\)$/);
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d INFO {2}second$/);
    expect(written).not.toContain('c2VjcmV0');
  });
});
