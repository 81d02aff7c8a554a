import type { OutriggerConfig } from '../../config/types.js';
import { createDocumentRoutes } from '../../http/document-routes.js';
import type { DocumentStore } from '../../store/document-store.js';
import { permissionValidator, type PermissionDocument } from './permission-document.js';

/**
 * `/_admin/acl` and `/_admin/acl/<id>` (SPEC §3.5). Takes the two parts it needs rather than the
 * AppContext: app-context sits above access (it is built from access's parts).
 */
export function createPermissionRoutes(parts: { config: OutriggerConfig; permissions: DocumentStore<PermissionDocument> }) {
  const validate = permissionValidator(parts.config);
  return createDocumentRoutes<PermissionDocument>({
    store: parts.permissions,
    noun: 'permission',
    validate: (candidate) => validate(candidate),
    matchesSearch: (doc, term) => doc._id.toLowerCase().includes(term) || doc.predicate.toLowerCase().includes(term),
    compare: (a, b) => b.priority - a.priority || (a._id < b._id ? 1 : -1),
  });
}
