import { ConditionSyntaxError, parseCondition } from '../condition/index.js';
import { badRequest, methodNotAllowed } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { isJsonObject } from '../util/objects.js';
import { sendJson } from '../http/respond.js';
import type { SubRouteHandler } from './admin-route.js';

const KINDS = ['webhook', 'permission'] as const;

/**
 * `POST <admin>/conditions/check` `{"condition": "...", "kind"?: "webhook" | "permission"}` →
 * 200 `{"valid": true}` or `{"valid": false, "error": "...", "position": n}` (0-based index of
 * the offending character). The console checks a condition as it is typed with it; it parses
 * exactly as a write would (webhook conditions refuse `@user` variables, permissions allow them).
 */
export function createConditionCheckRoute(): SubRouteHandler {
  return async function handleConditionCheck(scope, subPath) {
    if (subPath !== '/check') throw badRequest(`nothing at ${scope.path}; use POST .../conditions/check`);
    if (scope.method !== 'POST') throw methodNotAllowed(['POST']);
    const body = await readJsonBody(scope, 64 * 1024);
    if (!isJsonObject(body)) throw badRequest('the body must be {"condition": "...", "kind": "webhook" | "permission"}');
    const extra = Object.keys(body).find((k) => k !== 'condition' && k !== 'kind');
    if (extra) throw badRequest(`${extra} is not a field here (use condition and kind)`);
    if (typeof body.condition !== 'string') throw badRequest('condition must be a string');
    const kind = body.kind ?? 'webhook';
    if (!KINDS.includes(kind as (typeof KINDS)[number])) throw badRequest(`kind must be "webhook" or "permission" (got ${JSON.stringify(kind)})`);
    if (body.condition.trim() === '') return sendJson(scope.res, 200, { valid: false, error: 'the condition is empty', position: 0 });
    try {
      parseCondition(body.condition, { allowUserVariables: kind === 'permission' });
      sendJson(scope.res, 200, { valid: true });
    } catch (error) {
      if (!(error instanceof ConditionSyntaxError)) throw error;
      sendJson(scope.res, 200, { valid: false, error: error.message, position: error.position });
    }
  };
}
