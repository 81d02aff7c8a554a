import { badRequest, conflict, methodNotAllowed, notFound } from '../errors.js';
import { sendJson } from '../http/respond.js';
import type { RequestScope } from '../http/scope.js';
import { FEATURE_NAMES, type FeatureAction, type FeatureName, type FeatureStates } from './feature-states.js';

const ACTIONS: readonly FeatureAction[] = ['install', 'enable', 'disable', 'uninstall'];

/** `GET <admin>/features`, `POST <admin>/features/<name>/<action>`; the caller is already authorized. */
export function createFeatureRoutes(features: FeatureStates) {
  return async function handle(scope: RequestScope, subPath: string): Promise<void> {
    if (subPath === '' || subPath === '/') {
      if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
      return sendJson(scope.res, 200, features.list());
    }
    const [, name, action, ...rest] = subPath.split('/');
    if (!FEATURE_NAMES.includes(name as FeatureName) || rest.length) throw notFound(`no feature ${JSON.stringify(name)}; features are ${FEATURE_NAMES.join(', ')}`);
    if (!action) {
      if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
      return sendJson(scope.res, 200, { name, state: features.state(name as FeatureName) });
    }
    if (scope.method !== 'POST') throw methodNotAllowed(['POST']);
    if (!ACTIONS.includes(action as FeatureAction)) throw badRequest(`unknown action ${JSON.stringify(action)}; use one of ${ACTIONS.join(', ')}`);
    const result = await features.apply(name as FeatureName, action as FeatureAction);
    if ('problem' in result) throw conflict(result.problem);
    return sendJson(scope.res, 200, { name, state: result.state });
  };
}
