import type { OutriggerConfig } from '../../config/types.js';
import type { SetupKind } from '../../setup/setup-kind.js';
import type { DocumentStore } from '../../store/document-store.js';
import { checkPredicateSyntax } from '../predicate-check.js';
import { validatePermission, type PermissionDocument } from './permission-document.js';

export function permissionValidator(config: OutriggerConfig) {
  const ctx = { adminRoles: config.acl.adminRoles, checkPredicate: (text: string) => checkPredicateSyntax(text, true) };
  return (candidate: Record<string, unknown>) => validatePermission(candidate, ctx);
}

export function permissionSetupKind(config: OutriggerConfig, store?: DocumentStore<PermissionDocument>): SetupKind {
  const validate = permissionValidator(config);
  return {
    section: 'permissions',
    noun: 'permission',
    store: store as unknown as SetupKind['store'],
    validate: (candidate) => validate(candidate) as ReturnType<SetupKind['validate']>,
  };
}
