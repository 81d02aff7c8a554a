import type { AccessControl } from '../access/permissions/access-control.js';
import type { Principal } from '../principal/principal.js';
import { badRequest, forbidden, ValidationError } from '../errors.js';
import { isJsonObject } from '../util/objects.js';

/** What the permission that applies lets a caller's keys be (SPEC §5.3 steps 3, 5, 6, 7). */
export interface KeyPolicy {
  /** The `_id` of the permission whose `apiKeys` block applies. */
  permissionId: string;
  availableRoles: readonly string[];
  maxExpiresInDays: number;
  /** Where the maximum comes from, for messages. */
  maxExpiresFrom: 'permission' | 'service';
  maxKeysPerUser: number;
}

export interface ServiceKeyDefaults {
  maxExpiresInDays: number;
  maxKeysPerUser: number;
  /** `acl.adminRoles`, named in the refusal. */
  adminRoles: readonly string[];
}

export const DEFAULT_EXPIRES_IN_DAYS = 90;
export const MAX_NAME_LENGTH = 100;

/**
 * Steps 2 and 3: admins never get keys, whatever the ACL says; otherwise the permission that
 * applies to the request (SPEC §3.5 selection) must carry an `apiKeys` block. Throws 403
 * saying which is missing. Agent sign-in asks the same question for its consent page.
 */
export function keyPolicyFor<X>(acl: AccessControl<X>, principal: Principal, exchange: X, defaults: ServiceKeyDefaults, what = 'POST /keys'): KeyPolicy {
  if (acl.isAdmin(principal))
    throw forbidden(
      `admin roles never get API keys (you hold ${principal.roles.filter((r) => defaults.adminRoles.includes(r)).join(', ')}); admins use their Basic credentials, and keys are issued by users without admin roles`,
      'ADMIN_NO_KEYS',
    );
  const permission = acl.applying(principal, exchange);
  if (!permission)
    throw forbidden(`no permission applies to ${what} for your roles (${principal.roles.join(', ') || 'none'}); an admin must add one, with an apiKeys block, that allows it`, 'NO_KEY_PERMISSION');
  const block = permission.doc.apiKeys;
  if (!block)
    throw forbidden(
      `the permission "${permission.doc._id}" that applies to ${what} for your roles has no apiKeys block, so it grants no API keys; an admin must add apiKeys.roles to it`,
      'NO_API_KEYS_BLOCK',
    );
  const permissionMax = block['max-expires-in-days'];
  return {
    permissionId: permission.doc._id,
    availableRoles: block.roles,
    maxExpiresInDays: permissionMax ?? defaults.maxExpiresInDays,
    maxExpiresFrom: permissionMax === undefined ? 'service' : 'permission',
    maxKeysPerUser: block['max-keys-per-user'] ?? defaults.maxKeysPerUser,
  };
}

export interface IssueRequest {
  name: string;
  roles: string[];
  expiresIn: number | undefined;
}

/**
 * Step 4: `{name, roles?, expiresIn?}`; other fields are ignored (SPEC §5.2). Every problem is
 * reported at once, each naming its field.
 */
export function readIssueRequest(body: unknown): IssueRequest {
  if (!isJsonObject(body)) throw badRequest('the body must be a JSON object: {"name": "...", "roles"?: [...], "expiresIn"?: days}');
  const problems: string[] = [];
  const { name, roles, expiresIn } = body;
  if (name === undefined) problems.push('name is required: a label for the key, 1 to 100 characters');
  else if (typeof name !== 'string' || name.trim() === '') problems.push('name must be a non-empty string (1 to 100 characters)');
  else if ([...name].length > MAX_NAME_LENGTH) problems.push(`name must be at most ${MAX_NAME_LENGTH} characters (got ${[...name].length})`);
  if (roles !== undefined && (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string'))) problems.push('roles must be an array of strings (the roles the key carries; [] for none)');
  if (expiresIn !== undefined && !(typeof expiresIn === 'number' && Number.isInteger(expiresIn) && expiresIn > 0)) problems.push('expiresIn must be a positive integer: the key lifetime in days');
  if (problems.length) throw new ValidationError(problems);
  return { name: name as string, roles: [...new Set((roles as string[] | undefined) ?? [])], expiresIn: expiresIn as number | undefined };
}

/** Step 5: every requested role must be one the permission's apiKeys.roles offers (they need not be roles the user holds). */
export function checkRequestedRoles(policy: KeyPolicy, roles: readonly string[]): void {
  const outside = roles.filter((r) => !policy.availableRoles.includes(r));
  if (outside.length)
    throw forbidden(
      `${outside.length === 1 ? 'this role is' : 'these roles are'} not available for your API keys: ${outside.map((r) => JSON.stringify(r)).join(', ')} (available: ${policy.availableRoles.join(', ')})`,
      'KEY_ROLES_NOT_ALLOWED',
    );
}

/** Step 6: the lifetime in days; default min(90, maximum), refused above the maximum. */
export function keyLifetimeDays(policy: KeyPolicy, expiresIn: number | undefined): number {
  if (expiresIn === undefined) return Math.min(DEFAULT_EXPIRES_IN_DAYS, policy.maxExpiresInDays);
  if (expiresIn > policy.maxExpiresInDays)
    throw badRequest(
      `expiresIn must be at most ${policy.maxExpiresInDays} days, the maximum for your keys (${policy.maxExpiresFrom === 'permission' ? `max-expires-in-days of permission "${policy.permissionId}"` : 'apiKeys.maxExpiresInDays of this service'})`,
      'KEY_LIFETIME_TOO_LONG',
    );
  return expiresIn;
}

/** A rotation's grace period (SPEC §15): at most 7 days. */
export const MAX_GRACE_HOURS = 168;

/**
 * `POST /keys/<id>/rotate` body: `{"graceHours": n}`, 0 ≤ n ≤ 168, fractions allowed (0.5 is
 * half an hour). Required, with no default: how long the old key keeps working is the caller's
 * decision (0 ends it at once). Other fields are ignored, as for `POST /keys`.
 */
export function readRotateRequest(body: unknown): { graceHours: number } {
  const usage = `send {"graceHours": n}: how long the old key keeps working, in hours, from 0 to ${MAX_GRACE_HOURS} (7 days)`;
  if (!isJsonObject(body)) throw badRequest(`the body must be a JSON object: ${usage}`);
  const { graceHours } = body;
  if (graceHours === undefined) throw new ValidationError([`graceHours is required: ${usage}`]);
  if (typeof graceHours !== 'number' || !Number.isFinite(graceHours))
    throw new ValidationError([`graceHours must be a number of hours from 0 to ${MAX_GRACE_HOURS} (got ${JSON.stringify(graceHours)})`]);
  if (graceHours < 0) throw new ValidationError([`graceHours must be at least 0 (got ${graceHours}); 0 ends the old key at once`]);
  if (graceHours > MAX_GRACE_HOURS) throw new ValidationError([`graceHours must be at most ${MAX_GRACE_HOURS} (7 days; got ${graceHours})`]);
  return { graceHours };
}
