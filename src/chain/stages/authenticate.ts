/**
 * authenticate: who the caller is (access/authenticate.ts: Basic, API key, anonymous), kept in
 * the scope's `principal`. Public own routes (sign-in, metadata, probes) skip it. Recorded as the
 * `authenticate` span: `outrigger.auth.source` says whether it waited (Redis, a users lookup) or
 * not (a cache).
 */
import type { Authenticate } from '../../access/chain-hooks.js';
import type { Stage } from '../stage.js';

export function authenticateStage(authenticate: Authenticate): Stage {
  return {
    name: 'authenticate',
    when: (request) => request.route?.public !== true,
    run(request) {
      const principal = authenticate(request);
      if (!(principal instanceof Promise)) {
        request.principal = principal;
        return;
      }
      return principal.then((p) => {
        request.principal = p;
      });
    },
    span: {
      name: 'authenticate',
      describe(request, span, waited) {
        const { via } = request.principal;
        span.set('outrigger.auth.via', via);
        span.set('outrigger.auth.source', via === 'anonymous' ? 'none' : !waited ? 'cache' : via === 'apikey' ? 'redis' : 'verified');
      },
    },
  };
}
