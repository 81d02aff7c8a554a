import { describe, expect, it } from 'vitest';
import { NO_CIDRS, parseCidrs } from '../../../src/net/cidr.js';
import { resolveClientIp } from '../../../src/net/client-ip.js';

describe('resolveClientIp', () => {
  const trusted = parseCidrs(['10.0.0.0/8', 'fd00::/8']);

  it('uses the socket peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(resolveClientIp('203.0.113.9', '1.2.3.4', NO_CIDRS)).toBe('203.0.113.9');
  });

  it('uses the socket peer when the peer is not trusted (a client cannot spoof its IP)', () => {
    expect(resolveClientIp('203.0.113.9', '1.2.3.4', trusted)).toBe('203.0.113.9');
  });

  it('normalises an IPv4-mapped peer', () => {
    expect(resolveClientIp('::ffff:203.0.113.9', undefined, NO_CIDRS)).toBe('203.0.113.9');
    expect(resolveClientIp('::ffff:10.0.0.2', '198.51.100.7', trusted)).toBe('198.51.100.7');
  });

  it('takes the right-most untrusted X-Forwarded-For entry when the peer is trusted', () => {
    expect(resolveClientIp('10.0.0.2', '198.51.100.7', trusted)).toBe('198.51.100.7');
    // The client wrote "6.6.6.6" itself; the trusted chain appended the real address after it.
    expect(resolveClientIp('10.0.0.2', '6.6.6.6, 198.51.100.7, 10.1.1.1, 10.2.2.2', trusted)).toBe('198.51.100.7');
  });

  it('accepts several header lines', () => {
    expect(resolveClientIp('10.0.0.2', ['6.6.6.6', '198.51.100.7, 10.1.1.1'], trusted)).toBe('198.51.100.7');
  });

  it('falls back to the peer without a header or with an empty one', () => {
    expect(resolveClientIp('10.0.0.2', undefined, trusted)).toBe('10.0.0.2');
    expect(resolveClientIp('10.0.0.2', '  ', trusted)).toBe('10.0.0.2');
  });

  it('answers the left-most entry when every entry is trusted', () => {
    expect(resolveClientIp('10.0.0.2', '10.9.9.9, 10.1.1.1', trusted)).toBe('10.9.9.9');
  });

  it('stops at garbage: the nearest trusted hop to its right is the answer', () => {
    expect(resolveClientIp('10.0.0.2', '198.51.100.7, unknown', trusted)).toBe('10.0.0.2');
    expect(resolveClientIp('10.0.0.2', '198.51.100.7, garbage, 10.3.3.3', trusted)).toBe('10.3.3.3');
  });

  it('skips empty entries and strips ports and brackets', () => {
    expect(resolveClientIp('10.0.0.2', '198.51.100.7:5123, , 10.1.1.1', trusted)).toBe('198.51.100.7');
    expect(resolveClientIp('fd00::1', '[2001:db8::7]:443', trusted)).toBe('2001:db8::7');
    expect(resolveClientIp('fd00::1', '2001:DB8::7', trusted)).toBe('2001:db8::7');
    expect(resolveClientIp('10.0.0.2', '::ffff:198.51.100.7', trusted)).toBe('198.51.100.7');
  });

  it('returns an unparsable peer unchanged', () => {
    expect(resolveClientIp('weird', '1.2.3.4', trusted)).toBe('weird');
  });
});
