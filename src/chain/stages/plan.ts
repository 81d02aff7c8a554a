/**
 * plan: what the features change about a proxied request on its way (identity headers, a
 * readFilter's target, a projection's rewrite; access/proxy-policy.ts), decided synchronously.
 */
import type { PlanProxy } from '../../access/chain-hooks.js';
import type { Stage } from '../stage.js';

export function planStage(planProxy: PlanProxy): Stage {
  return {
    name: 'plan',
    when: (request) => request.route === undefined,
    run(request) {
      request.plan = planProxy(request);
    },
  };
}
