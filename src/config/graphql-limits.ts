import { checks, integer, boolean, oneOf, optionalSection, optionalText, route, text } from './fields.js';

/**
 * The GraphQL engine's limits (SPEC §1 `graphql.*`), declared once: the config's `graphql` section
 * is these plus where the engine is served and reads from (types.ts), the engine takes them whole
 * (src/graphql/types.ts `GraphqlLimits`), and the defaults below are the config's and the engine's.
 * The reason for each output default is in docs/graphql.md (Limits).
 */
export interface GraphqlLimitsConfig {
  /** Used when a query mapping omits `db`. */
  defaultDb: string;
  /** Limit used when a query mapping has none. */
  defaultLimit: number;
  /** Largest limit a mapping or argument may ask for. */
  maxLimit: number;
  /** Deepest selection nesting a query may have; introspection fields are not counted. */
  maxDepth: number;
  /** Backend reads one request may make; the request fails with 400 before the one past it. */
  maxBackendReads: number;
  /** Backend writes one GraphQL request may make; a mutation needing more is a 400 before the first (SPEC §6.4). */
  maxBackendWrites: number;
  /** Documents one GraphQL request may write in bulk; more is a 400 before any write (issue 27). */
  maxBulkWrite: number;
  /**
   * Items the cost estimate assumes for a list stored inside a document (a list field with no
   * mapping); the output budget stops a longer one while the answer is built (issue 34).
   */
  storedListItems: number;
  /** Time limit for executing one request (ms). */
  timeoutMs: number;
  /** Service-wide switch for introspection; an app may turn it off for itself. */
  introspection: boolean;
  /**
   * Largest estimated cost of one operation; an app's `descriptor.maxCost` replaces reads and
   * documents. `output`: values one answer may hold (issue 25), service-wide.
   */
  maxCost: { reads: number; documents: number; output: number };
  /** Aliases one operation may hold, fragments counted where spread. */
  maxAliases: number;
  /** Bytes of one GraphQL response body; larger answers are refused (RESPONSE_TOO_LARGE). */
  maxResponseBytes: number;
  /** Report backend reads and batching in `extensions`; an app may set its own. */
  verbose: boolean;
  /** Aggregation mappings through the backend's declared aggregations (`_aggrs`); opt-in. */
  aggregations: boolean;
  /**
   * `graphql-over-http` (default): no Accept or `*\/*` answers application/json, and with
   * application/json, GraphQL request errors (syntax, validation, variables) are 200, as the
   * GraphQL-over-HTTP spec asks. `restheart`: application/graphql-response+json by default and
   * 400 for those errors whatever the media type, as RESTHeart answers.
   * Refusals on `/graphql/<uri>` (401, 403, 429, 413, 503, 404...) are GraphQL-shaped under
   * `graphql-over-http` and RESTHeart-shaped under `restheart` (SPEC §15; serve/refusal.ts).
   */
  httpProfile: 'graphql-over-http' | 'restheart';
}

/** The values `graphql.httpProfile` takes; `graphql` is SPEC §15's name for `graphql-over-http`. */
export const HTTP_PROFILES = ['graphql-over-http', 'graphql', 'restheart'] as const;

function httpProfile(value: (typeof HTTP_PROFILES)[number]): GraphqlLimitsConfig['httpProfile'] {
  return value === 'graphql' ? 'graphql-over-http' : value;
}

export const GRAPHQL_LIMIT_DEFAULTS: Readonly<GraphqlLimitsConfig> = {
  defaultDb: 'restheart',
  defaultLimit: 100,
  maxLimit: 1000,
  maxDepth: 12,
  maxBackendReads: 50,
  maxBackendWrites: 100,
  maxBulkWrite: 1000,
  storedListItems: 100,
  timeoutMs: 10_000,
  introspection: true,
  maxCost: { reads: 50, documents: 100_000, output: 50_000 },
  maxAliases: 100,
  maxResponseBytes: 16 * 1024 * 1024,
  verbose: false,
  aggregations: false,
  httpProfile: 'graphql-over-http',
};

const D = GRAPHQL_LIMIT_DEFAULTS;

/** `graphql:` (SPEC §1, §6): the limits above with their bounds, where the apps are read, and the backend the engine calls. */
export const graphqlSchema = optionalSection({
  defaultDb: text(undefined, { fallback: D.defaultDb }),
  appsPath: route('/gql-apps'),
  backend: optionalSection({
    /** Defaults to upstream.url (validate.ts). */
    url: text((v) => (v === '' ? null : checks.httpUrl(v)), { fallback: '' }).transform((v) => v.replace(/\/$/, '')),
    collectionPath: text((v) => (v.includes('{collection}') ? null : 'must contain {collection} (and usually {db})'), { fallback: '/{db}/{collection}' }),
    auth: oneOf(['caller', 'service']).default('caller'),
    serviceAuthorization: optionalText(),
  }),
  defaultLimit: integer(1, 1000).default(D.defaultLimit),
  maxLimit: integer(1, 1000).default(D.maxLimit),
  maxDepth: integer(1, 100).default(D.maxDepth),
  maxBackendReads: integer(1, 10_000).default(D.maxBackendReads),
  maxBackendWrites: integer(1, 10_000).default(D.maxBackendWrites),
  maxBulkWrite: integer(1, 100_000).default(D.maxBulkWrite),
  storedListItems: integer(1, 100_000).default(D.storedListItems),
  timeoutMs: integer(100, 600_000).default(D.timeoutMs),
  introspection: boolean().default(D.introspection),
  maxCost: optionalSection({
    reads: integer(1, 100_000).default(D.maxCost.reads),
    documents: integer(1, 100_000_000).default(D.maxCost.documents),
    // Values one answer may hold (issue 25); the reasons for the defaults are in docs/graphql.md.
    output: integer(1, 100_000_000).default(D.maxCost.output),
  }),
  maxAliases: integer(1, 100_000).default(D.maxAliases),
  maxResponseBytes: integer(1024, 1024 * 1024 * 1024).default(D.maxResponseBytes),
  verbose: boolean().default(D.verbose),
  aggregations: boolean().default(D.aggregations),
  httpProfile: oneOf(HTTP_PROFILES).default(D.httpProfile).transform(httpProfile),
});
