import { forbidden, unauthorized } from '../../errors.js';
import type { DocumentStore } from '../../store/document-store.js';
import type { Principal } from '../../principal/principal.js';
import type { PermissionDocument } from './permission-document.js';

export interface CompiledCondition<X> {
  evaluate(exchange: X): boolean;
  usesRequestBody: boolean;
}

export interface CompiledPermission<X> {
  doc: PermissionDocument;
  condition: CompiledCondition<X>;
  roles: ReadonlySet<string>;
}

export type Decision<X> = { allowed: true; admin: true; permission: null } | { allowed: true; admin: false; permission: CompiledPermission<X> } | { allowed: false };

/**
 * SPEC §3.5: among the permissions whose roles meet the principal's and whose predicate matches,
 * the highest priority applies (ties: `_id` descending, as RESTHeart's mongo authorizer). The
 * list is compiled and sorted once per change, so a decision is a walk over parsed predicates.
 */
export class AccessControl<X> {
  private compiled: CompiledPermission<X>[] = [];
  private readonly adminRoles: ReadonlySet<string>;

  constructor(
    store: DocumentStore<PermissionDocument>,
    adminRoles: readonly string[],
    private readonly compile: (predicate: string) => CompiledCondition<X>,
    private readonly realm: string,
    private readonly onCompileError: (doc: PermissionDocument, error: unknown) => void = () => {},
  ) {
    this.adminRoles = new Set(adminRoles);
    store.onLoaded((docs) => this.rebuild([...docs.values()]));
  }

  private rebuild(docs: PermissionDocument[]): void {
    const compiled: CompiledPermission<X>[] = [];
    for (const doc of docs) {
      try {
        compiled.push({ doc, condition: this.compile(doc.predicate), roles: new Set(doc.roles) });
      } catch (error) {
        // Validated at write; only a hand-edited entry gets here. It grants nothing.
        this.onCompileError(doc, error);
      }
    }
    compiled.sort((a, b) => b.doc.priority - a.doc.priority || (a.doc._id < b.doc._id ? 1 : a.doc._id > b.doc._id ? -1 : 0));
    this.compiled = compiled;
  }

  isAdmin(principal: Principal): boolean {
    for (const role of principal.roles) if (this.adminRoles.has(role)) return true;
    return false;
  }

  /** Does any permission of the principal's roles need the parsed request body to decide? */
  needsRequestBody(principal: Principal): boolean {
    return this.compiled.some((p) => p.condition.usesRequestBody && principal.roles.some((r) => p.roles.has(r)));
  }

  /** The permission that applies, ignoring admin status (used for POST /keys' apiKeys block). */
  applying(principal: Principal, exchange: X): CompiledPermission<X> | null {
    for (const permission of this.compiled) {
      if (!principal.roles.some((r) => permission.roles.has(r))) continue;
      if (permission.condition.evaluate(exchange)) return permission;
    }
    return null;
  }

  decide(principal: Principal, exchange: X): Decision<X> {
    if (this.isAdmin(principal)) return { allowed: true, admin: true, permission: null };
    const permission = this.applying(principal, exchange);
    return permission ? { allowed: true, admin: false, permission } : { allowed: false };
  }

  /** The refusal: 401 with a Basic challenge for anonymous callers (they may sign in), 403 otherwise. */
  denial(principal: Principal): Error {
    if (principal.via === 'anonymous')
      return unauthorized('authentication required: sign in with Basic credentials or an API key', {
        'www-authenticate': `Basic realm="${this.realm}"`,
      });
    const roles = principal.roles.length ? principal.roles.join(', ') : 'none';
    const naming = this.compiled.filter((p) => principal.roles.some((r) => p.roles.has(r))).length;
    const via = principal.via === 'apikey' ? ' (an API key has only its own roles)' : '';
    return forbidden(
      `no permission allows this request for your roles; roles considered: ${roles}${via}. ` +
        (naming === 0 ? 'No permission names any of them' : `${naming} permission${naming === 1 ? ' names' : 's name'} them, but none matches this request`),
    );
  }
}
