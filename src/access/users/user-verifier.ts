/** Checks a Basic id/password pair. `null` means the credentials are wrong. */
export interface UserVerifier {
  verify(id: string, password: string, authorizationHeader: string): Promise<{ roles: string[] } | null>;
  /** Whether Outrigger itself vouches for the user (static) or the backend does (upstream). */
  readonly verifiedLocally: boolean;
}
