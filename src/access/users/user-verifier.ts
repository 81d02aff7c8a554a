import type { RequestTrace } from '../../observability/tracing/tracing.js';

/** Checks a Basic id/password pair. `null` means the credentials are wrong. */
export interface UserVerifier {
  /** `trace`: the request's, when a request asks (a lookup at the backend carries it, SPEC §9). */
  verify(id: string, password: string, authorizationHeader: string, trace?: RequestTrace): Promise<{ roles: string[] } | null>;
  /** Whether Outrigger itself vouches for the user (static) or the backend does (upstream). */
  readonly verifiedLocally: boolean;
}
