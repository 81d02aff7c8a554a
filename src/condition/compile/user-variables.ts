import { randomUUID } from 'node:crypto';
import type { CompiledAttribute } from '../attributes/attribute-parser.js';
import type { ExchangeUser } from '../exchange.js';
import type { EvaluationScope } from '../runtime/evaluation-scope.js';
import type { StringList } from './parameters.js';

const USER_VARIABLE = /^@user\.([^.\s][^\s]*)$/;

/** RESTHeart's other `@` variables, which Outrigger does not offer. */
const OTHER_RESTHEART_VARIABLES = ['@request', '@now', '@rnd', '@qparams', '@authenticated', '@roles', '@filter', '@mongoPermissions'];

export type UserVariableCheck = { readonly kind: 'none' } | { readonly kind: 'variable'; readonly path: readonly string[] } | { readonly kind: 'invalid'; readonly message: string };

/**
 * Classifies a value token. RESTHeart substitutes `@user.<field>` textually before parsing;
 * Outrigger parses once and reads the user at evaluation, so a variable must be a whole value.
 */
export function checkUserVariable(text: string, allowed: boolean): UserVariableCheck {
  if (!text.includes('@')) return { kind: 'none' };
  const match = USER_VARIABLE.exec(text);
  if (match !== null) {
    if (!allowed) return { kind: 'invalid', message: `${text}: @user variables are only available in ACL permission predicates` };
    return { kind: 'variable', path: match[1]!.split('.') };
  }
  if (text === '@user' || text.startsWith('@user.') || text.startsWith('@user[')) {
    return { kind: 'invalid', message: `${text}: write a user variable as @user.<field>, e.g. @user.id or @user.roles` };
  }
  // An address like bob@user.com is a literal; a variable stands after a non-word character.
  if (/(^|[^\w.%+-])@user\./.test(text)) {
    return { kind: 'invalid', message: `${text}: an @user variable must be a whole value; compare it with equals(...) instead of embedding it` };
  }
  const other = OTHER_RESTHEART_VARIABLES.find((name) => text === name || text.startsWith(`${name}.`) || text.startsWith(`${name}[`));
  if (other !== undefined) {
    return { kind: 'invalid', message: `${text}: the RESTHeart variable ${other} is not supported by Outrigger; only @user.<field> is` };
  }
  return { kind: 'none' };
}

/**
 * What `@user.<path>` refers to. `_id` falls back to `id`, since RESTHeart accounts from a
 * Mongo realm carry `_id` while Outrigger's principals carry `id`.
 */
function lookupUserValue(user: ExchangeUser | undefined, path: readonly string[]): unknown {
  if (user === undefined) return undefined;
  let value: unknown = user;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    if (value === null || typeof value !== 'object') return undefined;
    if (Array.isArray(value)) {
      if (!/^\d+$/.test(segment)) return undefined;
      value = value[Number(segment)];
    } else {
      const record = value as Record<string, unknown>;
      value = Object.prototype.hasOwnProperty.call(record, segment) ? record[segment] : undefined;
      if (value === undefined && i === 0 && segment === '_id') value = user.id;
    }
  }
  return value;
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return undefined;
}

/**
 * A user variable read as an attribute. A value that is missing, null, an object or an array
 * reads as a random token fixed when the condition was parsed (RESTHeart's rule "an
 * unresolved variable never widens access"): it equals no request value and no other variable.
 */
export function userAttribute(path: readonly string[]): CompiledAttribute {
  const unresolved = `@unresolved-${randomUUID()}`;
  return {
    read: (scope: EvaluationScope) => scalarText(lookupUserValue(scope.exchange.user, path)) ?? unresolved,
    usesResponse: false,
    constant: undefined,
  };
}

/**
 * A user variable where a list is expected: an array spreads into its scalar elements (as
 * RESTHeart writes `{'a','b'}`), a scalar is a one-element list, anything else the token.
 */
export function userListPart(path: readonly string[], spreadArrays: boolean): (scope: EvaluationScope) => readonly string[] {
  const unresolved = [`@unresolved-${randomUUID()}`];
  return (scope) => {
    const value = lookupUserValue(scope.exchange.user, path);
    if (Array.isArray(value)) {
      if (!spreadArrays) return unresolved;
      const items = value.map(scalarText).filter((item): item is string => item !== undefined);
      return items.length === value.length ? items : unresolved;
    }
    const text = scalarText(value);
    return text === undefined ? unresolved : [text];
  };
}

/** Builds a list from fixed strings and user-variable parts, fixed when there is no variable. */
export function stringList(parts: ReadonlyArray<string | ((scope: EvaluationScope) => readonly string[])>): StringList {
  if (parts.every((part): part is string => typeof part === 'string')) {
    const fixed = parts as readonly string[];
    return { fixed, resolve: () => fixed };
  }
  return {
    fixed: undefined,
    resolve: (scope) => parts.flatMap((part) => (typeof part === 'string' ? [part] : part(scope))),
  };
}
