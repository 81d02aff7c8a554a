/**
 * Who is calling, decided the way RESTHeart's authentication mechanisms decide it. The stand-in
 * never authorizes (everyone may read and write); it authenticates so tests can see WHO a proxy
 * presented, and so wrong credentials fail the way they fail in front of RESTHeart (401).
 *
 * - `Authorization: Basic` — a configured user and password, or a user and an auth token issued
 *   by `/token` used as the password (RESTHeart's rndTokenManager, "Basic-Password" tokens).
 * - `Authorization: Bearer <jwt>` — when `jwt` is configured, like jwtAuthenticationMechanism:
 *   HMAC signature with the secret's UTF-8 bytes, `exp`/`nbf` enforced, `iss`/`aud` checked when
 *   configured, user id from `sub`, roles from the `roles` claim (an array of strings; missing
 *   means no roles). Without `jwt`, no mechanism claims the header: the caller is anonymous.
 * - The `rh_auth` cookie (`Bearer_<jwt>` / `Basic_<base64>`), as RESTHeart's authCookieHandler
 *   reads it, when there is no Authorization header.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { SignJWT, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';

export type IdentityVia = 'basic' | 'jwt' | 'anonymous' | 'invalid';

export interface Identity {
  via: IdentityVia;
  id?: string;
  roles?: string[];
}

export interface CallerCheck {
  identity: Identity;
  /** Why authentication failed, for the 401 message; set only when `via` is 'invalid'. */
  problem?: string;
}

export interface StandinUser {
  id: string;
  password: string;
  roles: string[];
}

export interface JwtOptions {
  secret: string;
  issuer?: string;
  audience?: string;
  algorithms?: string[];
}

export interface IssuedToken {
  token: string;
  validUntil: Date;
  /** RESTHeart's token_type: JWTs are Bearer tokens, random tokens are Basic passwords. */
  type: 'Bearer' | 'Basic-Password';
}

/** jwtTokenManager's default `ttl` is 15 minutes. */
const TOKEN_TTL_MS = 15 * 60 * 1000;
const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'];
const ANONYMOUS: CallerCheck = { identity: { via: 'anonymous' } };

/** RESTHeart accepts `HMAC256` as a spelling of `HS256`; jose wants the JOSE names. */
function normaliseAlgorithm(name: string): string {
  const upper = name.trim().toUpperCase();
  const alg = upper.startsWith('HMAC') ? `HS${upper.slice(4)}` : upper;
  if (!HMAC_ALGORITHMS.includes(alg)) {
    throw new TypeError(`standin jwt.algorithms: '${name}' is not supported; use HS256, HS384 or HS512`);
  }
  return alg;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export class Authenticator {
  private readonly users = new Map<string, StandinUser>();
  private readonly jwt: { key: Uint8Array; issuer?: string; audience?: string; algorithms: string[] } | undefined;
  /** Random auth tokens issued by /token when no JWT secret is configured: token -> holder. */
  private readonly issued = new Map<string, { id: string; roles: string[]; expires: number }>();

  constructor(users: StandinUser[], jwt: JwtOptions | undefined) {
    for (const user of users) this.users.set(user.id, { ...user, roles: [...user.roles] });
    if (jwt) {
      this.jwt = {
        key: new TextEncoder().encode(jwt.secret),
        issuer: jwt.issuer,
        audience: jwt.audience,
        // Default: every HMAC algorithm, so a proxy configured with HS384 works without ceremony.
        algorithms: (jwt.algorithms ?? HMAC_ALGORITHMS).map(normaliseAlgorithm),
      };
    }
  }

  async identify(headers: IncomingHttpHeaders): Promise<CallerCheck> {
    const authorization = headers.authorization ?? authorizationFromCookie(headers.cookie);
    if (!authorization) return ANONYMOUS;
    const space = authorization.indexOf(' ');
    const scheme = (space < 0 ? authorization : authorization.slice(0, space)).toLowerCase();
    const credentials = space < 0 ? '' : authorization.slice(space + 1).trim();
    if (scheme === 'basic') return this.checkBasic(credentials);
    if (scheme === 'bearer' && this.jwt) return this.checkJwt(credentials);
    return ANONYMOUS;
  }

  private checkBasic(credentials: string): CallerCheck {
    const decoded = Buffer.from(credentials, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const invalid: CallerCheck = {
      identity: { via: 'invalid' },
      problem: 'Basic authentication failed: wrong user id or password',
    };
    if (colon < 0) return invalid;
    const id = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
    const user = this.users.get(id);
    if (user && timingSafeEqual(digest(user.password), digest(password))) {
      return { identity: { via: 'basic', id, roles: [...user.roles] } };
    }
    const token = this.issued.get(password);
    if (token && token.id === id && token.expires > Date.now()) {
      return { identity: { via: 'basic', id, roles: [...token.roles] } };
    }
    return invalid;
  }

  private async checkJwt(token: string): Promise<CallerCheck> {
    const jwt = this.jwt as NonNullable<Authenticator['jwt']>;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwt.key, {
        algorithms: jwt.algorithms,
        ...(jwt.issuer !== undefined ? { issuer: jwt.issuer } : {}),
        ...(jwt.audience !== undefined ? { audience: jwt.audience } : {}),
      }));
    } catch (err) {
      const reason = err instanceof joseErrors.JWTExpired ? 'the token has expired' : (err as Error).message;
      return { identity: { via: 'invalid' }, problem: `JWT authentication failed: ${reason}` };
    }
    if (typeof payload.sub !== 'string' || payload.sub === '') {
      return { identity: { via: 'invalid' }, problem: 'JWT authentication failed: the token has no "sub" claim' };
    }
    const roles = payload.roles ?? [];
    if (!Array.isArray(roles) || !roles.every((r) => typeof r === 'string')) {
      return { identity: { via: 'invalid' }, problem: 'JWT authentication failed: the "roles" claim must be an array of strings' };
    }
    return { identity: { via: 'jwt', id: payload.sub, roles: roles as string[] } };
  }

  /** A token for an authenticated caller: a JWT when a secret is configured, else a random token. */
  async issueToken(id: string, roles: string[]): Promise<IssuedToken> {
    const validUntil = new Date(Date.now() + TOKEN_TTL_MS);
    if (this.jwt) {
      let builder = new SignJWT({ roles })
        .setProtectedHeader({ alg: this.jwt.algorithms[0] as string, typ: 'JWT' })
        .setSubject(id)
        .setIssuedAt()
        .setExpirationTime(Math.floor(validUntil.getTime() / 1000));
      if (this.jwt.issuer !== undefined) builder = builder.setIssuer(this.jwt.issuer);
      if (this.jwt.audience !== undefined) builder = builder.setAudience(this.jwt.audience);
      return { token: await builder.sign(this.jwt.key), validUntil, type: 'Bearer' };
    }
    const token = randomBytes(32).toString('base64url');
    this.issued.set(token, { id, roles: [...roles], expires: validUntil.getTime() });
    return { token, validUntil, type: 'Basic-Password' };
  }

  /** DELETE /token: random tokens of this user stop working (a JWT cannot be recalled). */
  revokeTokens(id: string): void {
    for (const [token, holder] of this.issued) if (holder.id === id) this.issued.delete(token);
  }
}

function authorizationFromCookie(cookieHeader: string | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name !== 'rh_auth') continue;
    const value = rest.join('=');
    // The cookie uses '_' where the header has a space (RFC 6265 forbids the space).
    const underscore = value.indexOf('_');
    return underscore < 0 ? undefined : `${value.slice(0, underscore)} ${value.slice(underscore + 1)}`;
  }
  return undefined;
}
