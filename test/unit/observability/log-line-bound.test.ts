import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, MAX_LOGGED_STRING } from '../../../src/observability/logger.js';

/** Issue 34 item 9: one request must not write a 15 KB log line; secrets stay redacted in what is kept. */
describe('log lines are bounded', () => {
  function capture() {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    return { lines, logger: createLogger({ level: 'debug', destination }) };
  }

  it('cuts every long string field, nested too, and still redacts the Authorization header', async () => {
    const { lines, logger } = capture();
    const headers = { authorization: 'Basic c2VjcmV0', 'x-long': 'y'.repeat(20_000) };
    logger.info({ req: { headers, path: `/${'p'.repeat(20_000)}` }, err: 'e'.repeat(20_000) }, 'upstream failure');
    await new Promise((resolve) => setImmediate(resolve));
    const line = lines.join('');
    expect(line.length).toBeLessThan(4 * MAX_LOGGED_STRING + 1000);
    const parsed = JSON.parse(line);
    expect(parsed.err).toMatch(/… \[17952 more characters\]$/);
    expect(parsed.req.headers['x-long'].length).toBeLessThan(MAX_LOGGED_STRING + 40);
    expect(parsed.req.headers.authorization).toBe('[redacted]');
    expect(line).not.toContain('c2VjcmV0');
    // The caller's object is not changed.
    expect(headers['x-long']).toHaveLength(20_000);
  });

  it('leaves a short line as it is', async () => {
    const { lines, logger } = capture();
    logger.info({ path: '/a', status: 502 }, 'upstream failure');
    await new Promise((resolve) => setImmediate(resolve));
    expect(JSON.parse(lines.join(''))).toMatchObject({ path: '/a', status: 502, msg: 'upstream failure' });
  });
});
