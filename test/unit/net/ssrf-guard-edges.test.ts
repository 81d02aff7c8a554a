import { describe, expect, it } from 'vitest';
import type { buildConnector } from 'undici';
import { checkWebhookUrlAtWrite, createGuardedDispatcher, resolveAllowedAddresses, TargetResolutionError, type HostLookup } from '../../../src/net/ssrf-guard/index.js';

// The SSRF guard's edges that test/unit/webhooks/ssrf-guard leaves open (found by `npm run
// mutate`, issue 54). NETWORK RULE: nothing here opens a socket: the dispatcher's connector is a
// recorder that refuses every connect, and names resolve through an injected resolver.
const ZONE: Record<string, string[]> = {
  'many.test': ['93.184.216.1', '93.184.216.2', '93.184.216.3', '93.184.216.4', '93.184.216.5'],
  'twice.test': ['93.184.216.9', '93.184.216.9', '2606:4700:4700::1111', '2606:4700:4700:0::1111'],
  'junk.test': ['93.184.216.1', 'not-an-address'],
};
const lookup: HostLookup = async (hostname) => {
  const addresses = ZONE[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address }));
};
const noLookup: HostLookup = async (hostname) => {
  throw new Error(`no lookup expected, asked for ${hostname}`);
};

function recorder(behaviour: 'fail' | 'throw-first' = 'fail') {
  const calls: Array<{ hostname: string; servername?: string }> = [];
  const connector: buildConnector.connector = (options, callback) => {
    calls.push({ hostname: options.hostname, servername: options.servername ?? undefined });
    if (behaviour === 'throw-first' && calls.length === 1) throw new Error('connector threw');
    callback(new Error(`test connector refuses ${options.hostname}`), null);
  };
  return { calls, connector };
}

async function send(origin: string, options: Parameters<typeof createGuardedDispatcher>[0] & { behaviour?: 'fail' | 'throw-first' } = {}) {
  const { calls, connector } = recorder(options.behaviour);
  const dispatcher = createGuardedDispatcher({ lookup, socketConnector: connector, ...options });
  try {
    await dispatcher.request({ origin, path: '/hook', method: 'POST', body: 'x', headersTimeout: 2000, bodyTimeout: 2000 });
    return { error: null, calls };
  } catch (error) {
    return { error: error as Error, calls };
  } finally {
    await dispatcher.close();
  }
}

describe('guarded dispatcher: which addresses it tries', () => {
  it('tries at most maxAddressesTried (3 by default) allowed addresses, in resolver order, then fails with the last error', async () => {
    const three = await send('http://many.test:8080');
    expect(three.calls.map((c) => c.hostname)).toEqual(['93.184.216.1', '93.184.216.2', '93.184.216.3']);
    expect(three.error?.message).toContain('93.184.216.3');
    const one = await send('http://many.test:8080', { maxAddressesTried: 1 });
    expect(one.calls.map((c) => c.hostname)).toEqual(['93.184.216.1']);
    const zero = await send('http://many.test:8080', { maxAddressesTried: 0 });
    expect(zero.calls.map((c) => c.hostname)).toEqual(['93.184.216.1']);
  });

  it('goes on to the next address when the connector throws', async () => {
    const { calls, error } = await send('http://many.test:8080', { behaviour: 'throw-first' });
    expect(calls.map((c) => c.hostname)).toEqual(['93.184.216.1', '93.184.216.2', '93.184.216.3']);
    expect(error).not.toBeNull();
  });

  it('tries an address the resolver gave twice only once', async () => {
    const { calls } = await send('http://twice.test:8080');
    expect(calls.map((c) => c.hostname)).toEqual(['93.184.216.9', '2606:4700:4700::1111']);
  });

  it('connects to a bracketed IPv6 literal without a lookup, and never to a forbidden one', async () => {
    const allowed = await send('http://[2606:4700:4700::1111]:8080', { lookup: noLookup });
    expect(allowed.calls).toEqual([{ hostname: '2606:4700:4700::1111', servername: undefined }]);
    const refused = await send('http://[::1]:8080', { lookup: noLookup });
    expect(refused.calls).toEqual([]);
    expect((refused.error as Error & { code?: string }).code).toBe('SSRF_BLOCKED');
  });

  it('sends the URL host as the TLS server name, never an IP address', async () => {
    const named = await send('https://many.test:8443', { maxAddressesTried: 1 });
    expect(named.calls).toEqual([{ hostname: '93.184.216.1', servername: 'many.test' }]);
    const literal = await send('https://93.184.216.7:8443');
    expect(literal.calls).toEqual([{ hostname: '93.184.216.7', servername: undefined }]);
  });

  it('bounds a lookup by connectTimeoutMs when no lookupTimeoutMs is given', async () => {
    const hanging: HostLookup = () => new Promise(() => {});
    const { calls, error } = await send('http://slow.test:8080', { lookup: hanging, connectTimeoutMs: 100 });
    expect(calls).toEqual([]);
    expect(error?.message).toContain('timed out after 100 ms');
    const own = await send('http://slow.test:8080', { lookup: hanging, connectTimeoutMs: 5000, lookupTimeoutMs: 80 });
    expect(own.error?.message).toContain('timed out after 80 ms');
  });
});

describe('resolveAllowedAddresses: edges', () => {
  it('uses a bracketed IPv6 literal as is, with no lookup', async () => {
    expect(await resolveAllowedAddresses('[2606:4700:4700::1111]', { lookup: noLookup })).toEqual(['2606:4700:4700::1111']);
    await expect(resolveAllowedAddresses('[fe80::1]', { lookup: noLookup })).rejects.toMatchObject({ code: 'SSRF_BLOCKED' });
  });

  it('asks the system resolver for every address when none is injected (localhost: from the hosts file, no traffic)', async () => {
    // An answer of one address (not a list) would read as "no addresses", a resolution failure.
    const error = await resolveAllowedAddresses('localhost').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'SSRF_BLOCKED' });
    expect((error as Error).message).toContain('127.0.0.1');
  });

  it('refuses a resolver answer that is not an IP address as a resolution failure', async () => {
    const error = await resolveAllowedAddresses('junk.test', { lookup }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetResolutionError);
    expect((error as Error).message).toContain('not-an-address');
  });

  it('bounds a lookup by 5 s when no bound is given', async () => {
    const hanging: HostLookup = () => new Promise(() => {});
    await expect(resolveAllowedAddresses('slow.test', { lookup: hanging })).rejects.toThrow(/timed out after 5000 ms/);
  }, 15_000);

  it('waits for a slow lookup when the timeout is 0 or not finite (no bound)', async () => {
    const slow: HostLookup = () => new Promise((resolve) => setTimeout(() => resolve([{ address: '93.184.216.1' }]), 30));
    expect(await resolveAllowedAddresses('slow.test', { lookup: slow, lookupTimeoutMs: 0 })).toEqual(['93.184.216.1']);
    expect(await resolveAllowedAddresses('slow.test', { lookup: slow, lookupTimeoutMs: Infinity })).toEqual(['93.184.216.1']);
  });
});

describe('checkWebhookUrlAtWrite: edges', () => {
  it('refuses a password without a user name too', async () => {
    const problems = await checkWebhookUrlAtWrite('https://:secret@many.test/x', { lookup });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('must not contain credentials');
  });

  it('refuses a blank URL as missing', async () => {
    expect(await checkWebhookUrlAtWrite('   ', { lookup: noLookup })).toEqual(['url is required: an absolute http:// or https:// URL']);
  });

  it('names the scheme it refuses without its colon', async () => {
    expect(await checkWebhookUrlAtWrite('ftp://many.test/x', { lookup: noLookup })).toEqual(['url must use http or https (got "ftp")']);
  });

  it('reports a resolver that throws as a resolution problem', async () => {
    const broken: HostLookup = () => {
      throw new TypeError('resolver bug');
    };
    expect((await checkWebhookUrlAtWrite('https://x.test/', { lookup: broken }))[0]).toContain('could not be resolved');
  });
});
