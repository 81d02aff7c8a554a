import type { SubRouteHandler } from '../admin/admin-route.js';
import type { AppContext } from '../app-context.js';
import { forbidden, methodNotAllowed, notFound, unauthorized } from '../errors.js';
import { checkJsonContentType, parseJsonBody, readBody } from '../http/body.js';
import { decodePathSegment } from '../input-limits/path-id.js';
import { pageOf, readPaging } from '../http/paging.js';
import { sendJson, sendNoContent } from '../http/respond.js';
import { readUsage } from '../limits/usage.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import { adminView, newestFirst, ownerView } from './key-record.js';
import type { ApiKeyStore, StoredKey } from './key-store.js';
import type { ApiKeyIssuer } from './issuer.js';
import { checkRequestedRoles, keyLifetimeDays, keyPolicyFor, readIssueRequest, readRotateRequest, type ServiceKeyDefaults } from './issuing-rules.js';
import { patchKeyLimits } from './key-limits.js';
import type { PriorityClass } from '../principal/priority.js';
import { readUsageDays } from './usage-route.js';

const BODY_LIMIT = 64 * 1024;

export interface KeyRouteParts {
  context: AppContext;
  store: ApiKeyStore;
  issuer: ApiKeyIssuer;
}

/**
 * `POST /keys`, `GET /keys`, `GET|DELETE /keys/<id>` (SPEC §5.2, Basic callers only) and the
 * `/_admin/keys` area. Issuing runs the checks of SPEC §5.3 in exactly their order.
 */
export function createKeyRoutes(parts: KeyRouteParts): { route: OwnRoute; adminArea: SubRouteHandler } {
  const sendUsage = usageSender(parts.context);
  return { route: ownerRoute(parts, sendUsage), adminArea: adminArea(parts, sendUsage) };
}

type SendUsage = (scope: RequestScope, keyId: string) => Promise<void>;

/** The owner's side: a Basic caller issues, lists, reads and revokes their own keys. */
function ownerRoute({ context, store, issuer }: KeyRouteParts, sendUsage: SendUsage): OwnRoute {
  const { config, features, acl } = context;
  const prefix = config.routes.keys;
  const defaults = { maxExpiresInDays: config.apiKeys.maxExpiresInDays, maxKeysPerUser: config.apiKeys.maxKeysPerUser, adminRoles: config.acl.adminRoles };

  /** Keys are issued and managed with a password sign-in: never anonymously, never with a key. */
  function basicCaller(scope: RequestScope, action: string): string {
    const { principal } = scope;
    if (principal.via === 'anonymous' || principal.id === null)
      throw unauthorized(`sign in with your Basic credentials (user id and password) to ${action}`, { 'www-authenticate': `Basic realm="${config.service.id}"` });
    if (principal.via === 'apikey') throw forbidden(`an API key cannot ${action}; sign in with your Basic credentials (user id and password) instead`, 'KEY_CANNOT_MANAGE_KEYS');
    return principal.id;
  }

  async function issue(scope: RequestScope): Promise<void> {
    const owner = basicCaller(scope, 'issue API keys');
    // 1. The feature.
    if (!features.enabled('api-keys')) throw forbidden('API keys are disabled on this service', 'API_KEYS_DISABLED');
    // Permissions that look at the request body need it read before they are evaluated.
    if (acl.needsRequestBody(scope.principal)) scope.bufferedBody = await readBody(scope, BODY_LIMIT);
    // 2. Admin roles; 3. the apiKeys block of the permission that applies.
    const policy = keyPolicyFor(acl, scope.principal, context.exchangeFor(scope), defaults, `${scope.method} ${prefix}`);
    // 4. The body.
    const request = readIssueRequest(await jsonBody(scope));
    // 5. Roles; 6. lifetime.
    checkRequestedRoles(policy, request.roles);
    const lifetimeDays = keyLifetimeDays(policy, request.expiresIn);
    // 7. The limit, counted and enforced atomically in Redis.
    const { record, key } = await issuer.issue({ owner, name: request.name, roles: request.roles, lifetimeDays, maxKeys: policy.maxKeysPerUser, via: 'api' });
    sendJson(scope.res, 201, { _id: record._id, name: record.name, roles: record.roles, expiresAt: { $date: record.expiresAt }, key }, { location: `${prefix}/${encodeURIComponent(record._id)}` });
  }

  const rotate = rotateRoute({ context, issuer }, defaults, basicCaller);

  async function listOwn(scope: RequestScope): Promise<void> {
    const owner = basicCaller(scope, 'list your API keys');
    const paging = readPaging(scope.query);
    const keys = (await store.listOfOwner(owner)).sort(byNewest);
    sendJson(
      scope.res,
      200,
      pageOf(keys, paging).map((k) => ownerView(k.record, k.lastUsedAt)),
      { 'x-total-count': keys.length },
    );
  }

  async function one(scope: RequestScope, id: string): Promise<void> {
    const owner = basicCaller(scope, scope.method === 'DELETE' ? 'revoke API keys' : 'read your API keys');
    if (scope.method === 'DELETE') {
      if (!(await issuer.revoke(id, { owner, actor: owner }))) throw notFound(`you have no key ${JSON.stringify(id)}; list yours with GET ${prefix}`);
      return sendNoContent(scope.res);
    }
    const found = await store.get(id);
    if (!found || found.record.owner !== owner) throw notFound(`you have no key ${JSON.stringify(id)}; list yours with GET ${prefix}`);
    sendJson(scope.res, 200, ownerView(found.record, found.lastUsedAt));
  }

  return {
    kind: 'keys',
    prefix,
    handle: (scope) => handleKeys(scope),
  };

  async function handleKeys(scope: RequestScope): Promise<void> {
    const rest = scope.path.slice(prefix.length);
    const rotateOf = actionPath(rest, 'rotate');
    if (rotateOf !== null) return rotate(scope, rotateOf);
    const usageOf = actionPath(rest, 'usage');
    if (usageOf !== null) {
      const owner = basicCaller(scope, "read your API keys' usage");
      const found = await store.get(usageOf);
      if (!found || found.record.owner !== owner) throw notFound(`you have no key ${JSON.stringify(usageOf)}; list yours with GET ${prefix}`);
      return sendUsage(scope, usageOf);
    }
    const id = idFrom(rest);
    if (id === null) {
      if (scope.method === 'POST') return issue(scope);
      if (scope.method === 'GET') return listOwn(scope);
      throw methodNotAllowed(['GET', 'POST']);
    }
    if (scope.method !== 'GET' && scope.method !== 'DELETE') throw methodNotAllowed(['GET', 'DELETE']);
    return one(scope, id);
  }
}

/** `/_admin/keys[?owner=&client=]`, `/_admin/keys/<id>`; the caller is already authorized. */
function adminArea({ context, store, issuer }: KeyRouteParts, sendUsage: SendUsage): SubRouteHandler {
  const { config } = context;
  return (scope, subPath) => handleAdmin(scope, subPath);

  async function handleAdmin(scope: RequestScope, subPath: string): Promise<void> {
    const usageOf = actionPath(subPath, 'usage');
    if (usageOf !== null) {
      if (!(await store.get(usageOf))) throw notFound(`no key ${JSON.stringify(usageOf)} on this service`);
      return sendUsage(scope, usageOf);
    }
    const id = idFrom(subPath);
    if (id === null) {
      if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
      const paging = readPaging(scope.query);
      const owner = scope.query.get('owner') || null;
      const client = scope.query.get('client') || null;
      const keys = (await store.listAll()).filter((k) => (owner === null || k.record.owner === owner) && (client === null || k.record.client === client)).sort(byNewest);
      return sendJson(
        scope.res,
        200,
        pageOf(keys, paging).map((k) => adminView(k.record, k.lastUsedAt)),
        { 'x-total-count': keys.length },
      );
    }
    if (scope.method === 'DELETE') {
      if (!(await issuer.revoke(id, { actor: scope.principal.id ?? 'admin' }))) throw notFound(`no key ${JSON.stringify(id)} on this service`);
      return sendNoContent(scope.res);
    }
    if (scope.method === 'PATCH') return patchLimits(scope, id);
    if (scope.method !== 'GET') throw methodNotAllowed(['GET', 'PATCH', 'DELETE']);
    const found = await store.get(id);
    if (!found) throw notFound(`no key ${JSON.stringify(id)} on this service`);
    sendJson(scope.res, 200, adminView(found.record, found.lastUsedAt));
  }

  /** `PATCH /_admin/keys/<id>` with `{"limits": {...}}` and/or `{"priority": ...}`: the key's own limits (SPEC §10) and class (SPEC §13); every replica applies them within the change bus's delay. */
  async function patchLimits(scope: RequestScope, id: string): Promise<void> {
    checkJsonContentType(scope.req);
    const body = parseJsonBody(await readBody(scope, BODY_LIMIT), 'send {"limits": {"<by: key policy>": {"limit": 1000, "window": "60s"}}}');
    const policies = config.limits.policies;
    // Checked before the read: a bad body is the client's mistake whether or not the key exists.
    patchKeyLimits(undefined, body, policies);
    const priority = (body as { priority?: PriorityClass | null }).priority;
    const updated = await store.update(id, (record) => {
      const limits = patchKeyLimits(record.limits, body, policies);
      const { limits: _old, priority: oldPriority, ...rest } = record;
      // SPEC §13: null removes the key's class (default), absent keeps it.
      const kept = priority === undefined ? oldPriority : (priority ?? undefined);
      return { ...rest, ...(limits ? { limits } : {}), ...(kept ? { priority: kept } : {}) };
    });
    if (!updated) throw notFound(`no key ${JSON.stringify(id)} on this service`);
    await context.bus.publish({ kind: 'apikeys', id });
    const found = await store.get(id);
    sendJson(scope.res, 200, adminView(updated, found?.lastUsedAt));
  }
}

function usageSender(context: AppContext): SendUsage {
  return async (scope, keyId) => {
    if (scope.method !== 'GET') throw methodNotAllowed(['GET']);
    const days = readUsageDays(scope.query, Date.now());
    // With limits on, what this replica counted and Redis had not yet when it answered is added.
    const usage = context.limits ? await context.limits.usage.read(keyId, days) : await readUsage(context.redis, context.keys, keyId, days);
    sendJson(scope.res, 200, usage);
  };
}

/** `POST /keys/<id>/rotate` (SPEC §15): the issuing checks that still apply, in §5.3's order, then the rotation. */
function rotateRoute({ context, issuer }: Pick<KeyRouteParts, 'context' | 'issuer'>, defaults: ServiceKeyDefaults, basicCaller: (scope: RequestScope, action: string) => string) {
  const { features, acl } = context;
  const prefix = context.config.routes.keys;
  return async (scope: RequestScope, id: string): Promise<void> => {
    const owner = basicCaller(scope, 'rotate API keys');
    if (scope.method !== 'POST') throw methodNotAllowed(['POST']);
    if (!features.enabled('api-keys')) throw forbidden('API keys are disabled on this service', 'API_KEYS_DISABLED');
    if (acl.needsRequestBody(scope.principal)) scope.bufferedBody = await readBody(scope, BODY_LIMIT);
    const policy = keyPolicyFor(acl, scope.principal, context.exchangeFor(scope), defaults, `${scope.method} ${scope.path}`);
    const { graceHours } = readRotateRequest(await jsonBody(scope, 'send {"graceHours": n}, 0 to 168'));
    const rotated = await issuer.rotate({ id, owner, graceMs: Math.round(graceHours * 3_600_000), policy });
    if (!rotated) throw notFound(`you have no key ${JSON.stringify(id)}; list yours with GET ${prefix}`);
    const { record, key } = rotated;
    sendJson(scope.res, 201, { _id: record._id, name: record.name, roles: record.roles, expiresAt: { $date: record.expiresAt }, key }, { location: `${prefix}/${encodeURIComponent(record._id)}` });
  };
}

const byNewest = (a: StoredKey, b: StoredKey) => newestFirst(a.record, b.record);

/** `'/<id>/<action>'` → the decoded id; anything else → null. */
function actionPath(rest: string, action: 'usage' | 'rotate'): string | null {
  const m = /^\/([^/]+)\/([a-z]+)$/.exec(rest);
  return m && m[2] === action ? decodePathSegment(m[1]!, 'key id') : null;
}

/** `''` or `'/'` → null (the collection); `'/<id>'` → the decoded id; deeper paths → 404. */
function idFrom(rest: string): string | null {
  if (rest === '' || rest === '/') return null;
  const raw = rest.slice(1);
  if (raw.includes('/')) throw notFound(`nothing at this path; keys are addressed as <keys route>/<id>`);
  return decodePathSegment(raw, 'key id');
}

/** The JSON body of POST /keys or a rotation (already read when a permission needed it). */
async function jsonBody(scope: RequestScope, usage = 'send {"name": "...", "roles"?: [...], "expiresIn"?: days}'): Promise<unknown> {
  checkJsonContentType(scope.req);
  const body = scope.bufferedBody ?? (await readBody(scope, BODY_LIMIT));
  return parseJsonBody(body, usage);
}
