import { Pool } from 'undici';
import { OutriggerError } from '../../errors.js';
import type { UserVerifier } from './user-verifier.js';

/**
 * `users.source: upstream`: the backend checks the credentials (RESTHeart's `GET /roles/{id}`
 * with the same Basic header); 200 → roles from `rolesField`, 401/403 → wrong credentials.
 */
export function createUpstreamUserVerifier(options: { upstreamUrl: string; path: string; rolesField: string; timeoutMs: number }): UserVerifier & { close(): Promise<void> } {
  const base = new URL(options.upstreamUrl);
  const pool = new Pool(base.origin, { connections: 16, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });
  const prefix = base.pathname.replace(/\/$/, '');
  return {
    verifiedLocally: false,
    async verify(id, _password, authorization, trace) {
      let response;
      const path = prefix + options.path.replace('{id}', encodeURIComponent(id));
      // SPEC §9: the lookup carries the request's trace; a client span of its own when recorded.
      const span = trace?.child('GET users lookup', 'client', () => ({ 'http.request.method': 'GET', 'server.address': base.hostname, 'url.full': base.origin + prefix + options.path }));
      try {
        response = await pool.request({
          method: 'GET',
          path,
          headers: span ? { authorization, accept: 'application/json', traceparent: span.traceparent } : { authorization, accept: 'application/json' },
        });
        span?.end(response.statusCode);
      } catch (error) {
        span?.fail((error as { code?: string }).code ?? 'error');
        span?.end();
        throw new OutriggerError(502, 'USER_CHECK_UNAVAILABLE', `cannot check the credentials: the backend is unreachable (${(error as { code?: string }).code ?? 'error'})`);
      }
      if (response.statusCode === 401 || response.statusCode === 403) {
        await response.body.dump();
        return null;
      }
      if (response.statusCode !== 200) {
        await response.body.dump();
        throw new OutriggerError(502, 'USER_CHECK_FAILED', `cannot check the credentials: the backend answered ${response.statusCode} to ${options.path}`);
      }
      const body = (await response.body.json().catch(() => null)) as Record<string, unknown> | null;
      const roles = body?.[options.rolesField];
      if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string'))
        throw new OutriggerError(502, 'USER_CHECK_FAILED', `cannot check the credentials: the backend's answer has no "${options.rolesField}" array of strings`);
      return { roles: roles as string[] };
    },
    close: () => pool.close(),
  };
}
