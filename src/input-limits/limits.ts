/**
 * The bounds on what a client may send (docs/decisions.md, "Input limits"). Constants rather than
 * options: each is far above what a legitimate document needs and low enough that the recursive
 * code behind it (validation, merge patch, JSON.stringify, graphql-js) cannot run out of stack.
 */

/** Deepest nesting of arrays and objects in any JSON Outrigger parses (MongoDB's own BSON limit is 100). */
export const MAX_JSON_DEPTH = 100;

/** Deepest nesting of `{`, `(` and `[` in a GraphQL document, checked before graphql-js parses it. */
export const MAX_GRAPHQL_NESTING = 64;

/** Body cap of the admin document routes (permissions, apps, webhooks, test sends). */
export const MAX_DOCUMENT_BODY_BYTES = 1024 * 1024;
