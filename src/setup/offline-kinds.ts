import { permissionSetupKind } from '../access/permissions/setup.js';
import type { OutriggerConfig } from '../config/types.js';
import type { SetupKind } from './setup-kind.js';

/** Every setup section's validation without Redis, for `outrigger check`. */
export function offlineSetupKinds(config: OutriggerConfig): SetupKind[] {
  const kinds: SetupKind[] = [permissionSetupKind(config)];
  // setup: graphql apps
  // setup: webhooks
  return kinds;
}
