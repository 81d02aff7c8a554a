import type { AppContext } from '../../app-context.js';
import { createDocumentRoutes } from '../../http/document-routes.js';
import type { PermissionDocument } from './permission-document.js';
import { permissionValidator } from './setup.js';

/** `/_admin/acl` and `/_admin/acl/<id>` (SPEC §3.5). */
export function createPermissionRoutes(context: AppContext) {
  const validate = permissionValidator(context.config);
  return createDocumentRoutes<PermissionDocument>({
    store: context.permissions,
    noun: 'permission',
    validate: (candidate) => validate(candidate),
    matchesSearch: (doc, term) => doc._id.toLowerCase().includes(term) || doc.predicate.toLowerCase().includes(term),
    compare: (a, b) => b.priority - a.priority || (a._id < b._id ? 1 : -1),
  });
}
