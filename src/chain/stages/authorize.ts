/**
 * authorize: may the principal make this proxied request (the ACL, SPEC §3.5; access/proxy-policy.ts)?
 * Throws 401/403; fills the scope's `permission`. Own routes authorize themselves (they know
 * their operations), so only proxied requests pass here.
 */
import type { AuthorizeProxy } from '../../access/chain-hooks.js';
import type { Stage, Step } from '../stage.js';

export function authorizeStage(authorizeProxy: AuthorizeProxy): Stage {
  return {
    name: 'authorize',
    when: (request) => request.route === undefined,
    run: (request): Step => authorizeProxy(request),
  };
}
