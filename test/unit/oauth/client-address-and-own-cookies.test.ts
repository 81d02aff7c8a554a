import { describe, expect, it } from 'vitest';
import { clientAddressBucket } from '../../../src/net/client-address.js';
import { upstreamRequestHeaders, withoutOwnCookies } from '../../../src/proxy/headers.js';

describe('clientAddressBucket: what the sign-in limits count by', () => {
  it('is the IPv4 address itself, and the /64 of an IPv6 address', () => {
    expect(clientAddressBucket('198.51.100.7')).toBe('198.51.100.7');
    expect(clientAddressBucket('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(clientAddressBucket('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientAddressBucket('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(clientAddressBucket('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(clientAddressBucket('not an address')).toBe('not an address');
  });
});

describe("Outrigger's own sign-in cookies never go upstream", () => {
  it('removes outrigger-signin-* and __Host-outrigger-signin-*, keeps the rest in order', () => {
    expect(withoutOwnCookies('a=1; outrigger-signin-x=2; b=3')).toBe('a=1; b=3');
    expect(withoutOwnCookies('__Host-outrigger-signin-x=2')).toBe('');
    expect(withoutOwnCookies('my-outrigger-signin-x=2;b=3')).toBe('my-outrigger-signin-x=2; b=3');
  });

  it('drops the Cookie header left empty and passes any other Cookie header byte for byte', () => {
    const plan = { clientIp: '127.0.0.1', peerTrusted: false, proto: 'http' as const };
    const only = upstreamRequestHeaders({}, ['Cookie', 'outrigger-signin-abc=1'], plan);
    expect(only.filter((_, i) => i % 2 === 0)).not.toContain('Cookie');
    const other = upstreamRequestHeaders({}, ['Cookie', 'a=1;b=2'], plan);
    expect(other.slice(0, 2)).toEqual(['Cookie', 'a=1;b=2']);
  });
});
