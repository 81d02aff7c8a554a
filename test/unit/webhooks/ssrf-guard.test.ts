/**
 * The SSRF guard. NETWORK RULE: these tests only ever send traffic to loopback. Names resolve
 * through an injected resolver, the guarded dispatcher connects through a recording connector
 * that denies anything but a loopback IP literal, and, as a last line, every socket connect in
 * this process to a non-loopback host throws (so a broken guard fails loudly, never leaks).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { buildConnector } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseCidrs, parseIp } from '../../../src/net/cidr.js';
import {
  checkWebhookUrlAtWrite,
  classifyAddress,
  createGuardedDispatcher,
  isForbiddenAddress,
  resolveAllowedAddresses,
  SsrfBlockedError,
  TargetResolutionError,
  type HostLookup,
} from '../../../src/net/ssrf-guard/index.js';

function isLoopbackLiteral(host: string | undefined): boolean {
  if (!host) return false;
  const addr = parseIp(host);
  if (!addr) return false;
  if (addr.family === 4) return addr.bytes[0] === 127;
  return addr.bytes.every((b, i) => (i === 15 ? b === 1 : b === 0));
}

// ---- last line of defence: no socket in this process may connect anywhere but loopback ----
const illegalConnects: string[] = [];
const originalConnect = net.Socket.prototype.connect;
function destinationOf(args: unknown[]): { host: string | undefined; ipc: boolean } {
  let first = args[0];
  if (Array.isArray(first)) first = first[0];
  if (first && typeof first === 'object') {
    const o = first as { host?: string; path?: string };
    if (o.path) return { host: undefined, ipc: true };
    return { host: o.host ?? 'localhost', ipc: false };
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return { host: typeof args[1] === 'string' ? args[1] : 'localhost', ipc: false };
  }
  return { host: undefined, ipc: true };
}
beforeAll(() => {
  net.Socket.prototype.connect = function guardedTestConnect(this: net.Socket, ...args: unknown[]) {
    const { host, ipc } = destinationOf(args);
    if (!ipc && !isLoopbackLiteral(host)) {
      illegalConnects.push(String(host));
      throw new Error(`TEST SAFETY NET: a socket tried to connect to ${String(host)}; only loopback literals are allowed`);
    }
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
});
afterAll(() => {
  net.Socket.prototype.connect = originalConnect;
  expect(illegalConnects).toEqual([]);
});

// ---- test DNS ----
const ZONE: Record<string, string[]> = {
  'evil.test': ['10.0.0.1'],
  'loop.test': ['127.0.0.1'],
  'loop6.test': ['::1'],
  'meta.test': ['169.254.169.254'],
  'mixed.test': ['93.184.216.34', '10.0.0.1'],
  'public.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'nat64.test': ['64:ff9b::a9fe:a9fe'],
  'good.test': ['127.0.0.1'],
};
let lookups: string[] = [];
const lookup: HostLookup = async (hostname) => {
  lookups.push(hostname);
  const addresses = ZONE[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: net.isIP(address) }));
};

function recordingConnector() {
  const calls: Array<{ hostname: string; servername?: string }> = [];
  const base = buildConnector({ timeout: 2000 });
  const connector: buildConnector.connector = (opts, cb) => {
    calls.push({ hostname: opts.hostname, servername: opts.servername });
    if (!isLoopbackLiteral(opts.hostname)) {
      cb(new Error(`TEST: connector refused ${opts.hostname}`), null);
      return;
    }
    base(opts, cb);
  };
  return { calls, connector };
}

beforeEach(() => {
  lookups = [];
});

describe('classifyAddress / isForbiddenAddress', () => {
  it.each([
    ['127.0.0.1', '127.0.0.0/8'],
    ['127.255.0.9', '127.0.0.0/8'],
    ['10.0.0.1', '10.0.0.0/8'],
    ['172.16.5.4', '172.16.0.0/12'],
    ['192.168.0.1', '192.168.0.0/16'],
    ['169.254.169.254', '169.254.0.0/16'],
    ['100.64.0.1', '100.64.0.0/10'],
    ['0.0.0.0', '0.0.0.0/8'],
    ['0.1.2.3', '0.0.0.0/8'],
    ['224.0.0.251', '224.0.0.0/4'],
    ['239.255.255.250', '224.0.0.0/4'],
    ['240.0.0.1', '240.0.0.0/4'],
    ['255.255.255.255', '240.0.0.0/4'],
    ['192.0.0.170', '192.0.0.0/24'],
    ['192.0.2.1', '192.0.2.0/24'],
    ['198.18.0.1', '198.18.0.0/15'],
    ['198.51.100.1', '198.51.100.0/24'],
    ['203.0.113.1', '203.0.113.0/24'],
    ['192.88.99.1', '192.88.99.0/24'],
    ['::1', '::1/128'],
    ['::', '::/128'],
    ['::127.0.0.1', '::/96'],
    ['fc00::1', 'fc00::/7'],
    ['fd12:3456::1', 'fc00::/7'],
    ['fe80::1', 'fe80::/10'],
    ['fe80::1%eth0', 'fe80::/10'],
    ['fec0::1', 'fec0::/10'],
    ['ff02::1', 'ff00::/8'],
    ['100::1', '100::/64'],
    ['2001:db8::1', '2001:db8::/32'],
    ['2001::1', '2001::/32'],
    ['64:ff9b:1::1', '64:ff9b:1::/48'],
    ['::ffff:0:0:1', '::ffff:0:0:0/96'],
    ['4000::1', '2000::/3'],
    ['::ffff:127.0.0.1', '127.0.0.0/8'],
    ['::ffff:7f00:1', '127.0.0.0/8'],
    ['::ffff:a9fe:a9fe', '169.254.0.0/16'],
    ['64:ff9b::7f00:1', '64:ff9b::/96'],
    ['64:ff9b::169.254.169.254', '64:ff9b::/96'],
    ['2002:7f00:1::1', '2002::/16'],
    ['2002:a00:1::', '2002::/16'],
  ])('%s is forbidden (%s)', (ip, range) => {
    expect(classifyAddress(ip)?.range).toBe(range);
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it('explains embedded IPv4 in NAT64 and 6to4 addresses', () => {
    expect(classifyAddress('64:ff9b::a9fe:a9fe')?.description).toMatch(/NAT64 address embedding 169.254.169.254, which is link-local/);
    expect(classifyAddress('2002:7f00:1::1')?.embeddedIpv4).toBe('127.0.0.1');
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])('%s is public', (ip) => {
    expect(classifyAddress(ip)).toBeNull();
    expect(isForbiddenAddress(ip)).toBe(false);
  });

  it('treats anything that is not an IP address as forbidden', () => {
    expect(isForbiddenAddress('localhost')).toBe(true);
    expect(isForbiddenAddress('')).toBe(true);
  });

  it('exempts allowPrivateTargets, and only those', () => {
    const allow = parseCidrs(['127.0.0.0/8', '10.1.0.0/16', 'fd00::/8']);
    expect(isForbiddenAddress('127.0.0.1', allow)).toBe(false);
    expect(isForbiddenAddress('::ffff:127.0.0.1', allow)).toBe(false);
    expect(isForbiddenAddress('10.1.2.3', allow)).toBe(false);
    expect(isForbiddenAddress('10.2.0.1', allow)).toBe(true);
    expect(isForbiddenAddress('fd00::5', allow)).toBe(false);
    expect(isForbiddenAddress('::1', allow)).toBe(true);
    expect(isForbiddenAddress('169.254.169.254', allow)).toBe(true);
    expect(isForbiddenAddress('64:ff9b::7f00:1', allow)).toBe(false);
  });
});

describe('resolveAllowedAddresses', () => {
  it('uses IP literals without a lookup', async () => {
    await expect(resolveAllowedAddresses('93.184.216.34', { lookup })).resolves.toEqual(['93.184.216.34']);
    await expect(resolveAllowedAddresses('[2606:4700:4700::1111]', { lookup })).resolves.toEqual(['2606:4700:4700::1111']);
    expect(lookups).toEqual([]);
  });

  it('refuses when any resolved address is forbidden, naming them and how to allow', async () => {
    const err = await resolveAllowedAddresses('mixed.test', { lookup }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SsrfBlockedError);
    const e = err as SsrfBlockedError;
    expect(e.code).toBe('SSRF_BLOCKED');
    expect(e.message).toContain('"mixed.test" resolves to 10.0.0.1 (private, 10.0.0.0/8)');
    expect(e.message).toContain('webhooks.allowPrivateTargets (e.g. 10.0.0.1/32)');
    expect(e.addresses.map((a) => a.address)).toEqual(['10.0.0.1']);
  });

  it('reports resolution failures and lookup timeouts as TargetResolutionError', async () => {
    await expect(resolveAllowedAddresses('nowhere.test', { lookup })).rejects.toBeInstanceOf(TargetResolutionError);
    await expect(resolveAllowedAddresses('nowhere.test', { lookup })).rejects.toThrow(/ENOTFOUND/);
    const slow: HostLookup = () => new Promise(() => {});
    await expect(resolveAllowedAddresses('slow.test', { lookup: slow, lookupTimeoutMs: 50 })).rejects.toThrow(/timed out after 50 ms/);
    await expect(resolveAllowedAddresses('empty.test', { lookup: async () => [] })).rejects.toThrow(/no addresses/);
  });

  it('accepts allowPrivateTargets as strings', async () => {
    await expect(resolveAllowedAddresses('loop.test', { lookup, allowPrivateTargets: ['127.0.0.0/8'] })).resolves.toEqual(['127.0.0.1']);
  });
});

describe('checkWebhookUrlAtWrite', () => {
  it('accepts a public https URL', async () => {
    expect(await checkWebhookUrlAtWrite('https://public.test/hooks?x=1', { lookup })).toEqual([]);
  });

  it.each([
    ['ftp://public.test/x', /url must use http or https \(got "ftp"\)/],
    ['javascript:alert(1)', /url must use http or https/],
    ['https://user:pw@public.test/', /url must not contain credentials/],
    ['https://user@public.test/', /url must not contain credentials/],
    ['not a url', /url is not a valid absolute URL/],
    ['/relative', /url is not a valid absolute URL/],
    ['', /url is required/],
  ])('refuses %j', async (url, pattern) => {
    const problems = await checkWebhookUrlAtWrite(url, { lookup });
    expect(problems.join('\n')).toMatch(pattern);
    expect(lookups).toEqual([]);
  });

  it('refuses non-strings', async () => {
    expect(await checkWebhookUrlAtWrite(42, { lookup })).toEqual(['url is required: an absolute http:// or https:// URL']);
  });

  it.each([
    ['http://127.0.0.1:8080/'],
    ['http://10.0.0.1/'],
    ['http://169.254.169.254/latest/meta-data/'],
    ['http://[::1]/'],
    ['http://[::ffff:127.0.0.1]/'],
    ['http://[::ffff:7f00:1]/'],
    ['http://2130706433/'],
    ['http://0x7f.1/'],
    ['http://0/'],
    ['http://evil.test/'],
    ['http://loop.test/'],
    ['http://loop6.test/'],
    ['http://meta.test/'],
    ['http://mixed.test/'],
    ['http://mapped.test/'],
    ['http://nat64.test/'],
  ])('refuses %s (forbidden address)', async (url) => {
    const problems = await checkWebhookUrlAtWrite(url, { lookup });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^url: webhook target .* which webhooks may not reach: only public addresses are allowed\. If this internal target is intended, add its range to webhooks\.allowPrivateTargets/,
    );
  });

  it('refuses a host that does not resolve', async () => {
    const problems = await checkWebhookUrlAtWrite('https://nowhere.test/', { lookup });
    expect(problems).toEqual([expect.stringMatching(/^url: webhook target host "nowhere.test" could not be resolved \(ENOTFOUND\)/)]);
  });

  it('allows private targets inside allowPrivateTargets', async () => {
    const allowPrivateTargets = parseCidrs(['127.0.0.0/8', '::1/128']);
    expect(await checkWebhookUrlAtWrite('http://127.0.0.1:9/', { lookup, allowPrivateTargets })).toEqual([]);
    expect(await checkWebhookUrlAtWrite('http://loop.test/', { lookup, allowPrivateTargets })).toEqual([]);
    expect(await checkWebhookUrlAtWrite('http://[::1]/', { lookup, allowPrivateTargets })).toEqual([]);
    expect(await checkWebhookUrlAtWrite('http://evil.test/', { lookup, allowPrivateTargets })).toHaveLength(1);
  });

  it('uses the given field name and can skip name resolution', async () => {
    expect(await checkWebhookUrlAtWrite('ftp://x', { lookup, field: 'webhook.url' })).toEqual([expect.stringMatching(/^webhook\.url must use/)]);
    expect(await checkWebhookUrlAtWrite('http://evil.test/', { lookup, resolveNames: false })).toEqual([]);
    expect(await checkWebhookUrlAtWrite('http://10.0.0.1/', { lookup, resolveNames: false })).toHaveLength(1);
    expect(lookups).toEqual([]);
  });
});

describe('createGuardedDispatcher (send time)', () => {
  let server: http.Server;
  let port: number;
  let received: Array<{ method?: string; url?: string; host?: string; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        received.push({ method: req.method, url: req.url, host: req.headers.host, body });
        if (req.url === '/redirect') {
          res.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` }).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    received = [];
  });

  async function send(origin: string, options: Parameters<typeof createGuardedDispatcher>[0], path = '/hook') {
    const { calls, connector } = recordingConnector();
    const dispatcher = createGuardedDispatcher({ lookup, socketConnector: connector, ...options });
    try {
      const res = await dispatcher.request({ origin, path, method: 'POST', body: 'payload', headersTimeout: 5000, bodyTimeout: 5000 });
      const text = await res.body.text();
      return { ok: true as const, status: res.statusCode, headers: res.headers, text, calls };
    } catch (err) {
      return { ok: false as const, err: err as Error & { code?: string }, calls };
    } finally {
      await dispatcher.close();
    }
  }

  it.each([
    ['http://127.0.0.1:PORT', '127.0.0.1'],
    ['http://10.0.0.1:PORT', '10.0.0.1'],
    ['http://169.254.169.254:PORT', '169.254.169.254'],
    ['http://[::ffff:127.0.0.1]:PORT', '127.0.0.1'],
    ['http://[::1]:PORT', '::1'],
    ['http://loop.test:PORT', '127.0.0.1'],
    ['http://evil.test:PORT', '10.0.0.1'],
    ['http://mixed.test:PORT', '10.0.0.1'],
    ['http://meta.test:PORT', '169.254.169.254'],
    ['http://nat64.test:PORT', '64:ff9b::a9fe:a9fe'],
  ])('refuses %s before connecting', async (originTemplate, refusedAddress) => {
    const result = await send(originTemplate.replace('PORT', String(port)), {});
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.err).toBeInstanceOf(SsrfBlockedError);
    expect(result.err.code).toBe('SSRF_BLOCKED');
    expect(result.err.message).toContain(refusedAddress);
    expect(result.err.message).toContain('webhooks.allowPrivateTargets');
    expect(result.calls).toEqual([]); // the connector was never asked to open a socket
    expect(received).toEqual([]); // and nothing reached the loopback server
  });

  it('with allowPrivateTargets [127.0.0.0/8] really reaches a local server, connecting to the checked IP', async () => {
    const result = await send(`http://good.test:${port}`, { allowPrivateTargets: parseCidrs(['127.0.0.0/8']) });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.status).toBe(200);
    expect(result.text).toBe('ok');
    expect(result.calls).toEqual([{ hostname: '127.0.0.1', servername: 'good.test' }]);
    expect(lookups).toEqual(['good.test']);
    expect(received).toEqual([{ method: 'POST', url: '/hook', host: `good.test:${port}`, body: 'payload' }]);
  });

  it('pins the address it checked: a resolver that changes its answer after the check cannot redirect the connect', async () => {
    // First answer (checked) is loopback, which is allowed; any later answer would be 10.0.0.1.
    let calls = 0;
    const rebinding: HostLookup = async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]);
    const result = await send(`http://rebind.test:${port}`, { lookup: rebinding, allowPrivateTargets: parseCidrs(['127.0.0.0/8']) });
    expect(result.ok).toBe(true);
    expect(calls).toBe(1); // resolved once, by the guard
    expect(result.calls.map((c) => c.hostname)).toEqual(['127.0.0.1']);
  });

  it('a name resolving to loopback and a private address is refused even if loopback is allowed', async () => {
    const both: HostLookup = async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ];
    const result = await send(`http://both.test:${port}`, { lookup: both, allowPrivateTargets: parseCidrs(['127.0.0.0/8']) });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.err.code).toBe('SSRF_BLOCKED');
    expect(result.calls).toEqual([]);
  });

  it('does not follow redirects', async () => {
    const result = await send(`http://127.0.0.1:${port}`, { allowPrivateTargets: parseCidrs(['127.0.0.0/8']) }, '/redirect');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.status).toBe(302);
    expect(received.map((r) => r.url)).toEqual(['/redirect']);
  });

  it('tries the next allowed address when connecting to the first fails', async () => {
    // 127.0.0.2 and 127.0.0.1 are both loopback; nothing listens on 127.0.0.2:port.
    const two: HostLookup = async () => [
      { address: '127.0.0.2', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    const result = await send(`http://two.test:${port}`, { lookup: two, allowPrivateTargets: parseCidrs(['127.0.0.0/8']) });
    expect(result.ok).toBe(true);
    expect(result.calls.map((c) => c.hostname)).toEqual(['127.0.0.2', '127.0.0.1']);
  });

  it('reports an unresolvable name as a resolution error, without connecting', async () => {
    const result = await send(`http://nowhere.test:${port}`, {});
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.err).toBeInstanceOf(TargetResolutionError);
      expect(result.err.code).toBe('WEBHOOK_TARGET_UNRESOLVED');
    }
    expect(result.calls).toEqual([]);
  });

  it('uses the default connector (no test hook) and still refuses and still reaches allowed targets', async () => {
    const refusing = createGuardedDispatcher({ lookup });
    await expect(refusing.request({ origin: `http://evil.test:${port}`, path: '/', method: 'GET' })).rejects.toMatchObject({ code: 'SSRF_BLOCKED' });
    await refusing.close();
    const allowing = createGuardedDispatcher({ lookup, allowPrivateTargets: ['127.0.0.0/8'] });
    const res = await allowing.request({ origin: `http://loop.test:${port}`, path: '/direct', method: 'GET' });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    await allowing.close();
    expect(received.map((r) => r.url)).toEqual(['/direct']);
  });
});

/** A committed self-signed certificate for good.test (test/support/tls/README.md): no openssl needed to run these. */
const TLS_FIXTURE = new URL('../../support/tls/', import.meta.url);

describe('createGuardedDispatcher over https', () => {
  let server: https.Server;
  let port: number;
  const cert = readFileSync(new URL('cert.pem', TLS_FIXTURE), 'utf8');

  beforeAll(async () => {
    server = https.createServer({ key: readFileSync(new URL('key.pem', TLS_FIXTURE)), cert }, (req, res) => {
      res.end(`sni=${(req.socket as import('node:tls').TLSSocket).servername}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('connects to the checked IP while TLS (SNI and certificate) uses the URL host', async () => {
    const dispatcher = createGuardedDispatcher({ lookup, allowPrivateTargets: ['127.0.0.0/8'], tls: { ca: cert } });
    const res = await dispatcher.request({ origin: `https://good.test:${port}`, path: '/', method: 'GET' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('sni=good.test');
    await dispatcher.close();
  });

  it('fails the certificate check when the name does not match (the IP is not used as the TLS name)', async () => {
    const dispatcher = createGuardedDispatcher({ lookup, allowPrivateTargets: ['127.0.0.0/8'], tls: { ca: cert } });
    await expect(dispatcher.request({ origin: `https://loop.test:${port}`, path: '/', method: 'GET' })).rejects.toMatchObject({
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    await dispatcher.close();
  });
});
