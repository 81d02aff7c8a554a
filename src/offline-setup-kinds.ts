import { permissionSetupKind } from './setup/permission-kind.js';
import type { OutriggerConfig } from './config/types.js';
import type { SetupKind } from './setup/setup-kind.js';
import { graphqlAppSetupKind } from './graphql/document/setup-kind.js';
import { webhookSetupKind } from './webhooks/documents/index.js';

/**
 * Every setup section's validation without Redis: `outrigger check`, and a bootstrap file read
 * while Redis is away. Only the features' document validators, not their modules (no worker,
 * no routes).
 */
export function offlineSetupKinds(config: OutriggerConfig): SetupKind[] {
  const kinds: SetupKind[] = [permissionSetupKind(config)];
  kinds.push(graphqlAppSetupKind(config));
  kinds.push(webhookSetupKind(config));
  return kinds;
}
