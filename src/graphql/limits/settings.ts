/**
 * The limits on what one GraphQL operation may produce (issue 25), beside the read limits of
 * `GraphqlLimits`: aliases per operation, estimated output values, and response bytes. The
 * reason for each default is in docs/graphql.md (Limits).
 */
export interface OutputLimits {
  /** Aliased fields one operation may hold, counted where fragments are spread (100). */
  readonly maxAliases: number;
  /** Values (fields of every object, aliases included) one operation may produce, estimated before any read (50,000). */
  readonly maxOutput: number;
  /** Bytes of one response body; serialization stops past it with RESPONSE_TOO_LARGE (16 MiB). */
  readonly maxResponseBytes: number;
}

export const DEFAULT_OUTPUT_LIMITS: OutputLimits = {
  maxAliases: 100,
  maxOutput: 50_000,
  maxResponseBytes: 16 * 1024 * 1024,
};
