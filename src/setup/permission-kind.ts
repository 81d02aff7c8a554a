import { permissionValidator, type PermissionDocument } from '../access/permissions/permission-document.js';
import type { OutriggerConfig } from '../config/types.js';
import type { DocumentStore } from '../store/document-store.js';
import type { SetupKind } from './setup-kind.js';

/**
 * The `permissions` section of a setup file: the house's own section, where the features add
 * theirs through `FeatureModule.setupKinds`. It lives here, not in access/, so that access stays
 * below setup: access knows how to check a permission, setup knows how a file carries one.
 */
export function permissionSetupKind(config: OutriggerConfig, store?: DocumentStore<PermissionDocument>): SetupKind {
  const validate = permissionValidator(config);
  return {
    section: 'permissions',
    noun: 'permission',
    store: store as unknown as SetupKind['store'],
    validate: (candidate) => validate(candidate) as ReturnType<SetupKind['validate']>,
  };
}
