import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/errors.js';
import { cidrProblems, cidrsToStrings, formatIp, ipInCidrs, normalizeIp, parseCidr, parseCidrs, parseIp } from '../../../src/net/cidr.js';

describe('parseIp / normalizeIp', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['::1', '::1'],
    ['::', '::'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['[2001:db8::5]', '2001:db8::5'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeIp(input)).toBe(expected);
  });

  it('normalises IPv4-mapped IPv6 to IPv4, in both spellings', () => {
    expect(normalizeIp('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeIp('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(normalizeIp('0:0:0:0:0:FFFF:0A00:0001')).toBe('10.0.0.1');
    expect(parseIp('::ffff:10.1.2.3')?.family).toBe(4);
  });

  it('keeps IPv4-compatible (::a.b.c.d) as IPv6: it is a different address', () => {
    expect(normalizeIp('::127.0.0.1')).toBe('::7f00:1');
  });

  it.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1.2.3.-4',
    'a.b.c.d',
    ':::',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '12345::',
    'g::1',
    '1:2:3:4:5:6:7:8::',
    'fe80::1%',
    'localhost',
    '::ffff:1.2.3.256',
  ])('rejects %j', (input) => {
    expect(parseIp(input)).toBeNull();
  });
});

describe('parseCidr', () => {
  it('parses IPv4 and IPv6 CIDRs, bare addresses and clears host bits', () => {
    expect(parseCidr('10.0.0.0/8')).toMatchObject({ family: 4, prefix: 8, text: '10.0.0.0/8' });
    expect(parseCidr('10.1.2.3/8')).toMatchObject({ text: '10.0.0.0/8' });
    expect(parseCidr('192.168.1.7')).toMatchObject({ prefix: 32, text: '192.168.1.7/32' });
    expect(parseCidr('FD00::/8')).toMatchObject({ family: 6, text: 'fd00::/8' });
    expect(parseCidr('::1')).toMatchObject({ family: 6, prefix: 128, text: '::1/128' });
    expect(parseCidr('0.0.0.0/0')).toMatchObject({ text: '0.0.0.0/0' });
    expect(parseCidr(' 172.16.0.0/12 ')).toMatchObject({ text: '172.16.0.0/12' });
  });

  it('turns an IPv4-mapped CIDR into the IPv4 CIDR it denotes', () => {
    expect(parseCidr('::ffff:10.0.0.0/104')).toMatchObject({ family: 4, prefix: 8, text: '10.0.0.0/8' });
    expect(parseCidr('::ffff:7f00:1/128')).toMatchObject({ family: 4, text: '127.0.0.1/32' });
  });

  it('explains what is wrong', () => {
    expect(parseCidr('10.0.0.0/33')).toMatch(/prefix length "\/33" must be an integer from 0 to 32/);
    expect(parseCidr('fd00::/129')).toMatch(/0 to 128/);
    expect(parseCidr('10.0.0.300/8')).toMatch(/"10.0.0.300" is not an IPv4 or IPv6 address/);
    expect(parseCidr('10.0.0.0/')).toMatch(/prefix length/);
    expect(parseCidr('10.0.0.0/+8')).toMatch(/prefix length/);
    expect(parseCidr('')).toMatch(/empty/);
    expect(parseCidr('fe80::%eth0/64')).toMatch(/zone/);
  });
});

describe('parseCidrs', () => {
  it('lists every invalid entry by path and index', () => {
    let caught: unknown;
    try {
      parseCidrs(['10.0.0.0/8', 'bogus', '192.168.0.0/40', '::1'], 'listen.trustedProxies');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    const problems = (caught as ValidationError).problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^listen\.trustedProxies\[1\] "bogus" is not a valid CIDR/);
    expect(problems[1]).toMatch(/^listen\.trustedProxies\[2\] "192.168.0.0\/40" is not a valid CIDR: prefix length/);
  });

  it('reports non-string entries and non-arrays', () => {
    expect(cidrProblems([1], 'x')).toEqual(['x[0] must be a string such as "10.0.0.0/8" or "fd00::/8"']);
    expect(cidrProblems('10.0.0.0/8', 'x')[0]).toMatch(/^x must be an array/);
  });

  it('splits by family and keeps canonical texts', () => {
    const list = parseCidrs(['10.0.0.0/8', 'fd00::/8', '::ffff:192.168.0.0/112']);
    expect(list.v4.length).toBe(2);
    expect(list.v6.length).toBe(1);
    expect(cidrsToStrings(list)).toEqual(['10.0.0.0/8', '192.168.0.0/16', 'fd00::/8']);
  });
});

describe('ipInCidrs', () => {
  const list = parseCidrs(['10.0.0.0/8', '172.16.0.0/12', '192.168.1.7', 'fd00::/8', '2001:db8:abcd::/48', '100.64.0.0/10']);

  it.each([
    ['10.255.1.2', true],
    ['11.0.0.1', false],
    ['172.31.255.255', true],
    ['172.32.0.0', false],
    ['192.168.1.7', true],
    ['192.168.1.8', false],
    ['100.127.255.255', true],
    ['100.128.0.0', false],
    ['fd12:3456::1', true],
    ['fe80::1', false],
    ['2001:db8:abcd:1::1', true],
    ['2001:db8:abce::1', false],
    ['::ffff:10.0.0.1', true],
    ['::ffff:a00:1', true],
    ['::ffff:11.0.0.1', false],
    ['not-an-ip', false],
    ['', false],
  ])('%s → %s', (ip, expected) => {
    expect(ipInCidrs(ip, list)).toBe(expected);
  });

  it('0.0.0.0/0 and ::/0 hold every address of their family', () => {
    const all = parseCidrs(['0.0.0.0/0', '::/0']);
    expect(ipInCidrs('8.8.8.8', all)).toBe(true);
    expect(ipInCidrs('2606:4700::1111', all)).toBe(true);
  });

  it('odd prefix lengths match bit by bit', () => {
    const l = parseCidrs(['192.168.0.0/23', '2001:db8::/33']);
    expect(ipInCidrs('192.168.1.255', l)).toBe(true);
    expect(ipInCidrs('192.168.2.0', l)).toBe(false);
    expect(ipInCidrs('2001:db8:7fff::1', l)).toBe(true);
    expect(ipInCidrs('2001:db8:8000::1', l)).toBe(false);
  });
});

describe('parser agrees with node:net', () => {
  // A seeded generator of IPv6 spellings (compressed runs, leading zeros, dotted tails),
  // half of them damaged by one inserted or deleted character.
  let seed = 12345;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  function spelling(): string {
    let parts = Array.from({ length: 8 }, () => (rnd(10) < 4 ? '0' : rnd(0x10000).toString(16)));
    if (rnd(5) === 0) parts = parts.map((p) => p.padStart(rnd(5), '0'));
    if (rnd(5) === 0) parts = [...parts.slice(0, 6), `${rnd(256)}.${rnd(256)}.${rnd(256)}.${rnd(256)}`];
    if (rnd(10) < 7) {
      const start = rnd(parts.length);
      const len = 1 + rnd(parts.length - start);
      return `${parts.slice(0, start).join(':')}::${parts.slice(start + len).join(':')}`;
    }
    return parts.join(':');
  }

  it('accepts exactly what net.isIP accepts, and formats to something it accepts', () => {
    const mismatches: string[] = [];
    for (let n = 0; n < 20000; n++) {
      let s = spelling();
      if (rnd(2) === 0) {
        const i = rnd(s.length + 1);
        s = rnd(2) === 0 ? s.slice(0, i) + ':.0fg'[rnd(5)] + s.slice(i) : s.slice(0, i) + s.slice(i + 1);
      }
      const mine = parseIp(s);
      if ((mine !== null) !== (net.isIP(s) !== 0)) mismatches.push(s);
      if (mine && net.isIP(formatIp(mine)) === 0) mismatches.push(`format of ${s}`);
    }
    expect(mismatches).toEqual([]);
  });
});
