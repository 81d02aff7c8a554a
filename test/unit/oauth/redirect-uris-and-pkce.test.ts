import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pkceVerifierMatches } from '../../../src/oauth/pkce.js';
import { redirectUriMatches, redirectUriProblem } from '../../../src/oauth/clients/redirect-uris.js';
import { validateConfig } from '../../../src/config/validate.js';

describe('redirect URIs', () => {
  it('allows https, loopback http and reverse-domain private schemes; refuses the rest, naming why', () => {
    for (const ok of ['https://app.example/cb', 'http://127.0.0.1:5000/cb', 'http://[::1]/cb', 'http://localhost:1/cb', 'com.example.app:/oauth']) expect(redirectUriProblem(ok), ok).toBeNull();
    const refused: Array<[unknown, RegExp]> = [
      ['http://app.example/cb', /not loopback/],
      ['http://127.0.0.2/cb', /not loopback/],
      ['https://app.example/cb#x', /fragment/],
      ['https://u:p@app.example/cb', /credentials/],
      ['javascript:alert(1)', /never a redirect target/],
      ['data:text/html,x', /never a redirect target/],
      ['file:///etc/passwd', /never a redirect target/],
      ['myapp:/cb', /reverse-domain/],
      ['/relative', /not an absolute URI/],
      ['', /non-empty/],
      [42, /non-empty/],
    ];
    for (const [uri, why] of refused) expect(redirectUriProblem(uri), String(uri)).toMatch(why);
  });

  it('matches exactly, except a loopback http URI on any port', () => {
    const registered = ['https://app.example/cb', 'http://127.0.0.1:5000/cb?x=1'];
    expect(redirectUriMatches(registered, 'https://app.example/cb')).toBe(true);
    expect(redirectUriMatches(registered, 'https://app.example/cb/')).toBe(false);
    expect(redirectUriMatches(registered, 'https://app.example:444/cb')).toBe(false);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:6000/cb?x=1')).toBe(true);
    expect(redirectUriMatches(registered, 'http://127.0.0.1/cb?x=1')).toBe(true);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:6000/cb')).toBe(false);
    expect(redirectUriMatches(registered, 'http://localhost:5000/cb?x=1')).toBe(false);
    expect(redirectUriMatches(registered, 'https://127.0.0.1:5000/cb?x=1')).toBe(false);
    expect(redirectUriMatches(registered, 'http://127.0.0.1:6000/cb?x=1#f')).toBe(false);
  });
});

describe('PKCE S256', () => {
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  it('accepts the matching verifier (RFC 7636 appendix B) and nothing else', () => {
    expect(challenge).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(pkceVerifierMatches(verifier, challenge)).toBe(true);
    expect(pkceVerifierMatches(`${verifier.slice(0, -1)}Y`, challenge)).toBe(false);
    expect(pkceVerifierMatches(challenge, challenge)).toBe(false); // plain: the challenge as verifier
    expect(pkceVerifierMatches('short', createHash('sha256').update('short').digest('base64url'))).toBe(false);
    expect(pkceVerifierMatches(verifier, `${challenge}=`)).toBe(false);
  });
});

describe('mcp config', () => {
  it('defaults, and names bad values by path', () => {
    const base = { service: { id: 's' }, upstream: { url: 'http://127.0.0.1:1' } };
    const { config } = validateConfig(base);
    expect(config.mcp).toEqual({
      server: 'backend',
      signIn: 'key-or-token',
      path: '/mcp',
      tokenTtlMinutes: 60,
      registrationsPerHour: 30,
      registrationsPerDay: 500,
      authorizeRequestsPerAddress: 60,
      authorizeRequestsTotal: 10_000,
      adminRoles: 'refuse',
      maxResponseBytes: 16 * 1024 * 1024,
      resources: [],
      clientMetadata: { allowPrivateTargets: [], timeoutMs: 5000, maxBytes: 16384, cacheSeconds: 300 },
    });
    const { problems } = validateConfig({ ...base, mcp: { signIn: 'sometimes', path: 'mcp/', tokenTtlMinutes: 0, clientMetadata: { allowPrivateTargets: ['nope'] } }, routes: { keys: '/mcp' } });
    const text = problems.join('\n');
    expect(text).toMatch(/mcp\.signIn/);
    expect(text).toMatch(/mcp\.path/);
    expect(text).toMatch(/mcp\.tokenTtlMinutes/);
    expect(text).toMatch(/mcp\.clientMetadata\.allowPrivateTargets/);
  });

  it("refuses an mcp.path that is one of Outrigger's own routes", () => {
    const { problems } = validateConfig({ service: { id: 's' }, upstream: { url: 'http://127.0.0.1:1' }, mcp: { path: '/keys' } });
    expect(problems.join('\n')).toMatch(/mcp\.path: \/keys is already used by routes\.keys/);
  });
});
