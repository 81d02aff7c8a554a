/** Who a request runs as (SPEC §3.1). */
import type { LimitAmount } from './limit-amount.js';
import type { PriorityClass } from './priority.js';

export interface Principal {
  id: string | null;
  roles: readonly string[];
  via: 'basic' | 'apikey' | 'anonymous';
  /** The API key record id, for key-authenticated requests. */
  keyId?: string;
  /** True when Outrigger itself verified the credentials (static users, keys): it may then speak for the caller upstream. */
  verifiedLocally: boolean;
  /** The key's own limits for named `by: key` policies (SPEC §10, set by an admin), for key-authenticated requests. */
  keyLimits?: Readonly<Record<string, LimitAmount>>;
  /** The key's class when the backend is at its limit (SPEC §13, set by an admin), for key-authenticated requests. */
  priority?: PriorityClass;
}

export const UNAUTHENTICATED_ROLE = '$unauthenticated';

export const ANONYMOUS: Principal = Object.freeze({
  id: null,
  roles: Object.freeze([UNAUTHENTICATED_ROLE]),
  via: 'anonymous',
  verifiedLocally: false,
}) as Principal;
