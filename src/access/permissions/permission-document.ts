import { isJsonObject } from '../../util/objects.js';
import type { Validation } from '../../http/document-routes.js';
import type { OutriggerConfig } from '../../config/types.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { checkPredicateSyntax } from '../predicate-check.js';
import { isPriorityClass, PRIORITY_CLASSES, type PriorityClass } from '../../principal/priority.js';

export interface ApiKeysBlock {
  roles: string[];
  'max-expires-in-days'?: number;
  'max-keys-per-user'?: number;
}

export interface PermissionDocument {
  [field: string]: unknown;
  _id: string;
  predicate: string;
  roles: string[];
  priority: number;
  /** SPEC §13: the class of the requests it allows when the backend is at its limit. */
  priorityClass?: PriorityClass;
  description?: string;
  apiKeys?: ApiKeysBlock;
  mongo?: { readFilter?: Record<string, unknown>; projectResponse?: Record<string, 0 | 1> };
}

const TOP_LEVEL = new Set(['_id', 'predicate', 'roles', 'priority', 'priorityClass', 'description', 'apiKeys', 'mongo']);
const API_KEYS_FIELDS = new Set(['roles', 'max-expires-in-days', 'max-keys-per-user']);
const MONGO_FIELDS = new Set(['readFilter', 'projectResponse']);

export interface PermissionValidationContext {
  adminRoles: readonly string[];
  /** Returns an error message (with the position) or null. */
  checkPredicate(text: string): string | null;
}

const isInt = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

/**
 * SPEC §3.5: the same validation for every write of a permission, through every door (HTTP,
 * `apply`, bootstrap). Every problem is reported at once, each naming its field.
 */
export function validatePermission(input: Record<string, unknown>, ctx: PermissionValidationContext): Validation<PermissionDocument> {
  const problems: string[] = [];
  for (const key of Object.keys(input)) if (!TOP_LEVEL.has(key)) problems.push(`${key} is not a permission field (allowed: ${[...TOP_LEVEL].join(', ')})${didYouMean(key, TOP_LEVEL)}`);

  const { _id, predicate, roles, priority, priorityClass, description, apiKeys, mongo } = input;
  if (typeof _id !== 'string' || _id === '') problems.push('_id must be a non-empty string');
  if (typeof predicate !== 'string' || predicate.trim() === '') problems.push('predicate must be a non-empty string in the condition language, e.g. path-prefix(/orders) and method(GET)');
  else {
    const error = ctx.checkPredicate(predicate);
    if (error) problems.push(`predicate ${error}`);
  }
  if (!Array.isArray(roles) || roles.length === 0 || roles.some((r) => typeof r !== 'string' || r === ''))
    problems.push('roles must be a non-empty array of non-empty strings ($unauthenticated allowed)');
  if (priority !== undefined && !isInt(priority, -1_000_000, 1_000_000)) problems.push('priority must be an integer (higher wins)');
  if (priorityClass !== undefined && !isPriorityClass(priorityClass))
    problems.push(`priorityClass must be one of ${PRIORITY_CLASSES.join(', ')} (who is refused first when the backend is at its limit; priority is the integer that picks the permission)`);
  if (description !== undefined && typeof description !== 'string') problems.push('description must be a string');

  if (apiKeys !== undefined) problems.push(...apiKeysProblems(apiKeys, ctx.adminRoles));

  if (mongo !== undefined) {
    if (!isJsonObject(mongo)) problems.push('mongo must be an object with readFilter and/or projectResponse');
    else {
      for (const key of Object.keys(mongo)) if (!MONGO_FIELDS.has(key)) problems.push(`mongo.${key} is not supported (supported: readFilter, projectResponse)`);
      if (mongo.readFilter !== undefined && (!isJsonObject(mongo.readFilter) || Object.keys(mongo.readFilter).length === 0))
        problems.push('mongo.readFilter must be a non-empty filter object, e.g. {"owner": "@user.id"}');
      if (mongo.projectResponse !== undefined) problems.push(...projectionProblems(mongo.projectResponse));
    }
  }

  if (problems.length) return { ok: false, problems };
  const doc: PermissionDocument = { _id: _id as string, predicate: predicate as string, roles: roles as string[], priority: (priority as number | undefined) ?? 0 };
  if (priorityClass !== undefined) doc.priorityClass = priorityClass as PriorityClass;
  if (description !== undefined) doc.description = description as string;
  if (apiKeys !== undefined) doc.apiKeys = apiKeys as unknown as ApiKeysBlock;
  if (mongo !== undefined) doc.mongo = mongo as PermissionDocument['mongo'];
  return { ok: true, doc };
}

function apiKeysProblems(block: unknown, adminRoles: readonly string[]): string[] {
  if (!isJsonObject(block)) return ['apiKeys must be an object: {"roles": [...], "max-expires-in-days"?: n, "max-keys-per-user"?: n}'];
  const problems: string[] = [];
  for (const key of Object.keys(block)) if (!API_KEYS_FIELDS.has(key)) problems.push(`apiKeys.${key} is not an apiKeys field (allowed: roles, max-expires-in-days, max-keys-per-user)`);
  const roles = block.roles;
  if (!Array.isArray(roles) || roles.length === 0 || roles.some((r) => typeof r !== 'string' || r === '') || new Set(roles).size !== roles.length)
    problems.push('apiKeys.roles must be a non-empty array of distinct strings');
  else {
    const admin = roles.filter((r: string) => adminRoles.includes(r));
    if (admin.length) problems.push(`apiKeys.roles must not contain the admin role${admin.length > 1 ? 's' : ''} ${admin.join(', ')} (admin roles never get API keys)`);
  }
  if (block['max-expires-in-days'] !== undefined && !isInt(block['max-expires-in-days'], 1, 3650)) problems.push('apiKeys.max-expires-in-days must be an integer from 1 to 3650');
  if (block['max-keys-per-user'] !== undefined && !isInt(block['max-keys-per-user'], 1, 1000)) problems.push('apiKeys.max-keys-per-user must be an integer from 1 to 1000');
  return problems;
}

function projectionProblems(projection: unknown): string[] {
  if (!isJsonObject(projection) || Object.keys(projection).length === 0) return ['mongo.projectResponse must be a non-empty object of field paths to 1 (keep) or 0 (remove)'];
  const values = new Set(Object.values(projection));
  if ([...values].some((v) => v !== 0 && v !== 1)) return ['mongo.projectResponse values must be 1 (keep) or 0 (remove)'];
  if (values.size > 1) return ['mongo.projectResponse must be all 1 (keep these) or all 0 (remove these), not a mix'];
  return [];
}

/** How a permission is checked wherever one is written: the admin API and setup files alike. */
export function permissionValidator(config: OutriggerConfig) {
  const ctx = { adminRoles: config.acl.adminRoles, checkPredicate: (text: string) => checkPredicateSyntax(text, true) };
  return (candidate: Record<string, unknown>) => validatePermission(candidate, ctx);
}
