import { randomBytes } from 'node:crypto';
import { OAuthProtocolError, OutriggerError, tooManyRequests } from '../../errors.js';
import { readJsonBody } from '../../http/body.js';
import { isJsonObject } from '../../util/objects.js';
import { sendJson } from '../../http/respond.js';
import type { RequestScope } from '../../http/scope.js';
import type { Logger } from '../../observability/logger.js';
import { clientAddressBucket } from '../../net/client-address.js';
import { CORS_HEADERS } from '../metadata.js';
import type { OAuthStore, RegisteredClient } from '../oauth-store.js';
import { redirectUriProblem } from './redirect-uris.js';

const BODY_LIMIT = 64 * 1024;
const MAX_REDIRECT_URIS = 10;
/** Stored 30 days: with 10 of them, a client is at most ~6 KB (`mcp.registrationsPerDay` bounds how many). */
const MAX_REDIRECT_URI_LENGTH = 512;

const invalid = (error: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) => new OAuthProtocolError(400, error, description, CORS_HEADERS);

/**
 * Dynamic client registration (RFC 7591; deprecated by MCP 2026-07-28 but still what most
 * clients use). Unauthenticated by design, so: rate-limited per client address (IPv6: per /64)
 * and for all addresses together per day, public clients only (no secrets are issued), redirect
 * URIs checked, small bodies, and clients expire after 30 days.
 */
export function createRegistrationHandler(p: { store: OAuthStore; perHour: number; perDay: number; logger: Logger }) {
  return async function handleRegister(scope: RequestScope): Promise<void> {
    if (scope.method === 'OPTIONS') {
      scope.res.writeHead(204, CORS_HEADERS);
      scope.res.end();
      return;
    }
    if (scope.method !== 'POST') throw new OAuthProtocolError(405, 'invalid_request', 'register with POST and a JSON body (RFC 7591)', { ...CORS_HEADERS, allow: 'POST' });
    const { count, retryAfter } = await p.store.countRegistration(clientAddressBucket(scope.clientIp));
    if (count > p.perHour) throw tooManyRequests(`too many client registrations from your address (at most ${p.perHour} an hour); try again in ${retryAfter} s`, retryAfter);
    let body: unknown;
    try {
      body = await readJsonBody(scope, BODY_LIMIT);
    } catch (error) {
      if (error instanceof OutriggerError) throw new OAuthProtocolError(error.status, 'invalid_client_metadata', error.message, CORS_HEADERS);
      throw error;
    }
    const client = readMetadata(body);
    // Counted once valid and within the address's allowance, so refused attempts cannot use up everyone's.
    const today = await p.store.countRegistrationToday();
    if (today.count > p.perDay) {
      p.logger.warn({ limit: p.perDay, setting: 'mcp.registrationsPerDay' }, 'client registration refused: the daily limit of all addresses together is reached (mcp.registrationsPerDay)');
      throw tooManyRequests(`this service accepts no more client registrations today; try again in ${today.retryAfter} s, or use a client metadata document`, today.retryAfter);
    }
    await p.store.saveClient(client);
    p.logger.info({ clientId: client.client_id, client: client.client_name, redirectUris: client.redirect_uris }, 'registered an OAuth client');
    sendJson(scope.res, 201, { ...client, grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' }, CORS_HEADERS);
  };
}

function readMetadata(body: unknown): RegisteredClient {
  if (!isJsonObject(body)) throw invalid('invalid_client_metadata', 'the body must be a JSON object of client metadata (RFC 7591 §2)');
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) throw invalid('invalid_redirect_uri', 'redirect_uris is required: a non-empty array of URIs');
  if (uris.length > MAX_REDIRECT_URIS) throw invalid('invalid_redirect_uri', `redirect_uris may list at most ${MAX_REDIRECT_URIS} URIs`);
  for (const [i, uri] of uris.entries()) {
    const problem = typeof uri === 'string' && uri.length > MAX_REDIRECT_URI_LENGTH ? `must be at most ${MAX_REDIRECT_URI_LENGTH} characters` : redirectUriProblem(uri);
    if (problem) throw invalid('invalid_redirect_uri', `redirect_uris[${i}]: ${problem}`);
  }
  const method = body.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none')
    throw invalid('invalid_client_metadata', `token_endpoint_auth_method ${JSON.stringify(method)} is not supported: only public clients ("none") can register here`);
  const grants = body.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || !grants.includes('authorization_code') || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')))
    throw invalid('invalid_client_metadata', 'grant_types must include authorization_code (the only grant; refresh_token is accepted and ignored)');
  const responses = body.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || responses.some((r) => r !== 'code'))) throw invalid('invalid_client_metadata', 'response_types may contain only "code"');
  const name = body.client_name;
  if (name !== undefined && (typeof name !== 'string' || name.trim() === '' || [...name].length > 100))
    throw invalid('invalid_client_metadata', 'client_name must be a non-empty string of at most 100 characters');
  const appType = body.application_type;
  if (appType !== undefined && appType !== 'native' && appType !== 'web') throw invalid('invalid_client_metadata', 'application_type must be "native" or "web"');
  const scope = body.scope;
  if (scope !== undefined && (typeof scope !== 'string' || scope.length > 1000)) throw invalid('invalid_client_metadata', 'scope must be a string of at most 1000 characters');
  const redirectUris = [...new Set(uris as string[])];
  return {
    client_id: randomBytes(16).toString('base64url'),
    client_name: typeof name === 'string' ? name.trim().replace(/\s+/g, ' ') : new URL(redirectUris[0]!).host || 'unnamed client',
    redirect_uris: redirectUris,
    client_id_issued_at: Math.floor(Date.now() / 1000),
    ...(appType !== undefined ? { application_type: appType } : {}),
    ...(scope !== undefined ? { scope } : {}),
  };
}
