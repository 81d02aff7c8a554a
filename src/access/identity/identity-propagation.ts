import type { OutriggerConfig } from '../../config/types.js';
import type { Principal } from '../../principal/principal.js';
import { JwtMinter } from './jwt-minter.js';

export interface IdentityPlan {
  removeRequestHeaders: ReadonlySet<string>;
  setRequestHeaders?: Record<string, string>;
}

/**
 * SPEC §3.4. Built once from the config: the header sets are fixed, so each request only picks
 * one of three precomputed plans and, in jwt mode, a cached token.
 */
export function createIdentityPropagation(config: OutriggerConfig) {
  const { mode, headers, jwt } = config.upstream.identity;
  const identityHeaders = [headers.user.toLowerCase(), headers.roles.toLowerCase()];
  // Anti-spoofing: whatever the mode, only Outrigger sets the identity headers.
  const passThrough: IdentityPlan = { removeRequestHeaders: new Set(identityHeaders) };
  const speakForCaller = new Set([...identityHeaders, 'authorization']);
  const minter = mode === 'jwt' && jwt.secret ? new JwtMinter({ ...jwt, secret: jwt.secret }) : null;

  return function planIdentity(principal: Principal): IdentityPlan {
    // Anonymous callers and Basic users the backend verifies itself keep their Authorization header.
    if (!principal.verifiedLocally) return passThrough;
    if (minter) return { removeRequestHeaders: speakForCaller, setRequestHeaders: { authorization: `Bearer ${minter.tokenFor(principal)}` } };
    if (mode === 'headers')
      return {
        removeRequestHeaders: speakForCaller,
        setRequestHeaders: { [identityHeaders[0]!]: principal.id ?? '', [identityHeaders[1]!]: principal.roles.join(',') },
      };
    return { removeRequestHeaders: speakForCaller };
  };
}

/** On answers to key-authenticated requests: a key must never be traded for a longer-lived credential. */
export function withoutBackendCredentials(lowerName: string, value: string | string[]): string | string[] | undefined {
  if (lowerName.startsWith('auth-token')) return undefined;
  if (lowerName !== 'set-cookie') return value;
  const kept = (Array.isArray(value) ? value : [value]).filter((c) => !c.trimStart().toLowerCase().startsWith('rh_auth='));
  return kept.length ? kept : undefined;
}
