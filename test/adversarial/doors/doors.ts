/**
 * Every door of Outrigger that takes a body, an id or a query: ONE list, which the doors test
 * and the fuzzer both walk. `covers` names the route prefix or admin area each door belongs to;
 * the tests fail when the running process serves a prefix or area no door covers, so a new
 * route cannot be forgotten here.
 */
import { ALICE, APP_URI, ROOT } from './input-system.js';

export type BodyKind = 'none' | 'json' | 'graphql';

export interface Door {
  name: string;
  /** A route prefix from the startup log (`/keys`), or `admin:<area>`. */
  covers: string;
  method: string;
  /** The path; `{id}` is where a (possibly malformed) id goes. */
  path: string;
  body: BodyKind;
  /** What a body at this door is about, for the fuzzer (permission, webhook, app, key, patch, event). */
  shape?: 'permission' | 'webhook' | 'app' | 'key' | 'key-rotation' | 'key-limits' | 'mcp' | 'test-send' | 'graphql' | 'graphql-mutation' | 'condition' | 'any';
  auth: string;
}

export const DOORS: Door[] = [
  { name: 'issue a key', covers: '/keys', method: 'POST', path: '/keys', body: 'json', shape: 'key', auth: ALICE },
  { name: 'read a key', covers: '/keys', method: 'GET', path: '/keys/{id}', body: 'none', auth: ALICE },
  { name: 'revoke a key', covers: '/keys', method: 'DELETE', path: '/keys/{id}', body: 'none', auth: ALICE },
  { name: 'list keys', covers: '/keys', method: 'GET', path: '/keys', body: 'none', auth: ALICE },
  { name: 'admin: read a key', covers: 'admin:keys', method: 'GET', path: '/_admin/keys/{id}', body: 'none', auth: ROOT },
  { name: 'admin: revoke a key', covers: 'admin:keys', method: 'DELETE', path: '/_admin/keys/{id}', body: 'none', auth: ROOT },
  { name: "admin: set a key's limits", covers: 'admin:keys', method: 'PATCH', path: '/_admin/keys/{id}', body: 'json', shape: 'key-limits', auth: ROOT },
  { name: "admin: read a key's usage", covers: 'admin:keys', method: 'GET', path: '/_admin/keys/{id}/usage', body: 'none', auth: ROOT },
  { name: "read a key's usage", covers: '/keys', method: 'GET', path: '/keys/{id}/usage', body: 'none', auth: ALICE },
  { name: 'rotate a key', covers: '/keys', method: 'POST', path: '/keys/{id}/rotate', body: 'json', shape: 'key-rotation', auth: ALICE },
  { name: 'admin: rate-limit policies', covers: 'admin:limits', method: 'GET', path: '/_admin/limits', body: 'none', auth: ROOT },
  { name: 'admin: create a permission', covers: 'admin:acl', method: 'POST', path: '/_admin/acl', body: 'json', shape: 'permission', auth: ROOT },
  { name: 'admin: replace a permission', covers: 'admin:acl', method: 'PUT', path: '/_admin/acl/{id}', body: 'json', shape: 'permission', auth: ROOT },
  { name: 'admin: patch a permission', covers: 'admin:acl', method: 'PATCH', path: '/_admin/acl/{id}', body: 'json', shape: 'permission', auth: ROOT },
  { name: 'admin: read a permission', covers: 'admin:acl', method: 'GET', path: '/_admin/acl/{id}', body: 'none', auth: ROOT },
  { name: 'admin: feature action', covers: 'admin:features', method: 'POST', path: '/_admin/features/{id}/enable', body: 'none', auth: ROOT },
  { name: 'admin: read a feature', covers: 'admin:features', method: 'GET', path: '/_admin/features/{id}', body: 'none', auth: ROOT },
  { name: 'admin: create a webhook', covers: 'admin:webhooks', method: 'POST', path: '/_admin/webhooks', body: 'json', shape: 'webhook', auth: ROOT },
  { name: 'admin: replace a webhook', covers: 'admin:webhooks', method: 'PUT', path: '/_admin/webhooks/{id}', body: 'json', shape: 'webhook', auth: ROOT },
  { name: 'admin: patch a webhook', covers: 'admin:webhooks', method: 'PATCH', path: '/_admin/webhooks/{id}', body: 'json', shape: 'webhook', auth: ROOT },
  { name: 'admin: read webhook logs', covers: 'admin:webhooks', method: 'GET', path: '/_admin/webhooks/{id}/logs', body: 'none', auth: ROOT },
  { name: 'admin: test send', covers: 'admin:webhooks', method: 'POST', path: '/_admin/webhooks/test', body: 'json', shape: 'test-send', auth: ROOT },
  { name: 'admin: recording', covers: 'admin:webhooks', method: 'GET', path: '/_admin/webhooks/recording', body: 'none', auth: ROOT },
  { name: 'admin: resend a log entry', covers: 'admin:webhooks', method: 'POST', path: '/_admin/webhooks/{id}/logs/{id}/resend', body: 'none', auth: ROOT },
  { name: 'admin: recover failed events', covers: 'admin:webhooks', method: 'POST', path: '/_admin/webhooks/{id}/recover', body: 'json', shape: 'any', auth: ROOT },
  { name: 'admin: cache state', covers: 'admin:cache', method: 'GET', path: '/_admin/cache', body: 'none', auth: ROOT },
  { name: 'admin: purge the cache', covers: 'admin:cache', method: 'DELETE', path: '/_admin/cache?collection=api/orders', body: 'none', auth: ROOT },
  { name: 'admin: backend protection state', covers: 'admin:backend', method: 'GET', path: '/_admin/backend', body: 'none', auth: ROOT },
  { name: 'admin: check a condition', covers: 'admin:conditions', method: 'POST', path: '/_admin/conditions/check', body: 'json', shape: 'condition', auth: ROOT },
  { name: 'create an app', covers: '/gql-apps', method: 'POST', path: '/gql-apps', body: 'json', shape: 'app', auth: ROOT },
  { name: 'replace an app', covers: '/gql-apps', method: 'PUT', path: '/gql-apps/{id}', body: 'json', shape: 'app', auth: ROOT },
  { name: 'patch an app', covers: '/gql-apps', method: 'PATCH', path: '/gql-apps/{id}', body: 'json', shape: 'app', auth: ROOT },
  { name: 'read an app', covers: '/gql-apps', method: 'GET', path: '/gql-apps/{id}', body: 'none', auth: ROOT },
  { name: 'GraphQL POST', covers: '/graphql', method: 'POST', path: `/graphql/${APP_URI}`, body: 'graphql', shape: 'graphql', auth: ROOT },
  { name: 'GraphQL mutation POST', covers: '/graphql', method: 'POST', path: `/graphql/${APP_URI}`, body: 'graphql', shape: 'graphql-mutation', auth: ROOT },
  { name: 'GraphQL GET', covers: '/graphql', method: 'GET', path: `/graphql/${APP_URI}`, body: 'none', shape: 'graphql', auth: ROOT },
  { name: "GraphiQL's example operation", covers: '/graphql', method: 'GET', path: `/graphql/${APP_URI}?graphiql-example`, body: 'none', auth: ROOT },
  { name: 'GraphiQL Basic sign-in', covers: '/graphql', method: 'GET', path: `/graphql/${APP_URI}?graphiql-sign-in`, body: 'none', auth: ROOT },
  { name: 'proxied write (webhook capture)', covers: 'proxy', method: 'POST', path: '/api/orders/{id}', body: 'json', shape: 'any', auth: ROOT },
  { name: 'health', covers: '/_health', method: 'GET', path: '/_health/ready', body: 'none', auth: '' },
  { name: 'metrics', covers: '/_metrics', method: 'GET', path: '/_metrics', body: 'none', auth: '' },
  { name: "MCP (Outrigger's own server)", covers: '/mcp', method: 'POST', path: '/mcp', body: 'json', shape: 'mcp', auth: ROOT },
  { name: 'oauth: register a client', covers: '/register', method: 'POST', path: '/register', body: 'json', shape: 'any', auth: '' },
  { name: 'oauth: token', covers: '/token', method: 'POST', path: '/token', body: 'none', auth: '' },
  { name: 'oauth: authorize', covers: '/authorize', method: 'GET', path: '/authorize', body: 'none', auth: '' },
  { name: 'oauth: resource metadata', covers: '/.well-known/oauth-protected-resource', method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', body: 'none', auth: '' },
  { name: 'oauth: server metadata', covers: '/.well-known/oauth-authorization-server', method: 'GET', path: '/.well-known/oauth-authorization-server', body: 'none', auth: '' },
  { name: 'oauth: OpenID discovery', covers: '/.well-known/openid-configuration', method: 'GET', path: '/.well-known/openid-configuration', body: 'none', auth: '' },
];

/** Prefixes and areas the running process serves that no door covers (must be empty). */
export function uncovered(routes: string[], adminAreas: string[]): string[] {
  const covered = new Set(DOORS.map((d) => d.covers));
  return [...routes.filter((r) => r !== '/_admin' && !covered.has(r)), ...adminAreas.map((a) => `admin:${a}`).filter((a) => !covered.has(a))];
}
