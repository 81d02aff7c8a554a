import type { Principal } from '../../principal/principal.js';
import { accessFacts } from '../../principal/access-facts.js';
import type { AppContext } from '../../app-context.js';
import { exchangeFromParts } from '../../condition/index.js';
import { OutriggerError } from '../../errors.js';
import { keyPolicyFor, type KeyPolicy } from '../../keys/issuing-rules.js';
import type { ApiKeyStore, StoredKey } from '../../keys/key-store.js';

/** What a signed-in user can give an agent (SPEC §5.6 `mcp.signIn`). */
export type Offer =
  { kind: 'key'; policy: KeyPolicy; activeKeys: StoredKey[] } | { kind: 'token'; roles: readonly string[]; minutes: number; withheld: readonly string[] } | { kind: 'refused'; message: string };

/**
 * Decides between a key (the apiKeys block of the permission that applies to `POST /keys`, with
 * every §5.3 rule), the user's own token, or nothing, per `mcp.signIn`. Asked again when the
 * user allows, so a permission changed in between is honoured.
 */
export function createOfferMaker(context: AppContext, store: ApiKeyStore) {
  const { config, acl, features } = context;
  const defaults = { maxExpiresInDays: config.apiKeys.maxExpiresInDays, maxKeysPerUser: config.apiKeys.maxKeysPerUser, adminRoles: config.acl.adminRoles };
  const mode = config.mcp.signIn;
  const adminRolesOf = (principal: Principal) => principal.roles.filter((r) => config.acl.adminRoles.includes(r));
  /**
   * The user's own token. Under `mcp.adminRoles: refuse` (the default) it never carries an admin
   * role: a client that registered itself must not get a root credential from one click. A user
   * whose roles are all admin roles is refused (a token with no role would do nothing).
   */
  const token = (principal: Principal): Offer => {
    const withheld = config.mcp.adminRoles === 'allow' ? [] : adminRolesOf(principal);
    const roles = principal.roles.filter((r) => !withheld.includes(r));
    if (withheld.length && roles.length === 0)
      return {
        kind: 'refused',
        message: `Your roles (${withheld.join(', ')}) are admin roles, and this service never gives admin roles to agents (mcp.adminRoles: refuse). Sign in as a user without admin roles, or ask an administrator.`,
      };
    return { kind: 'token', roles, minutes: config.mcp.tokenTtlMinutes, withheld };
  };

  return async function offerFor(principal: Principal): Promise<Offer> {
    // Tokens are verified by the key verifier, which is withheld while the feature is off.
    if (!features.enabled('api-keys')) return { kind: 'refused', message: 'API keys are disabled on this service, so agents cannot sign in; ask an administrator to enable them.' };
    if (mode === 'token-only') return token(principal);
    if (acl.isAdmin(principal)) {
      if (mode === 'key-only')
        return {
          kind: 'refused',
          message: `Admin roles (${adminRolesOf(principal).join(', ')}) never get API keys, and this service gives agents keys only (mcp.signIn: key-only). Sign in as a user without admin roles.`,
        };
      return token(principal);
    }
    // The facts POST /keys would give the permission's condition (principal/access-facts.ts).
    const exchange = exchangeFromParts({ method: 'POST', path: config.routes.keys, ...accessFacts(principal) });
    let policy: KeyPolicy;
    try {
      policy = keyPolicyFor(acl, principal, exchange, defaults, `POST ${config.routes.keys}`);
    } catch (error) {
      if (!(error instanceof OutriggerError) || error.status !== 403) throw error;
      if (mode === 'key-only') return { kind: 'refused', message: `No API key can be issued to you: ${error.message}.` };
      return token(principal);
    }
    const now = Date.now();
    const activeKeys = (await store.listOfOwner(principal.id!)).filter((k) => k.record.expiresAt > now);
    return { kind: 'key', policy, activeKeys };
  };
}

export type OfferMaker = ReturnType<typeof createOfferMaker>;
