/**
 * How an app document's stored operations (MCP tools, RESTHeart's `mcp.examples`) are told apart
 * from ones that would fail at call time: bounded as a request's query is (size, nesting), parsed,
 * and validated against the app's schema, each problem located in the operation's text as an
 * `<at> …` line. One place, so a tool and an example are held to the same bounds.
 */
import { GraphQLError, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { graphqlNestingDepth } from '../../input-limits/graphql-nesting.js';
import { MAX_GRAPHQL_NESTING } from '../../input-limits/limits.js';
import { located } from '../schema/sdl.js';
import { MAX_QUERY_BYTES } from '../types.js';

/** The stored operation's document, or undefined with a line in `problems` when it is too large, nests too deep or does not parse. */
export function parseStoredOperation(at: string, text: string, problems: string[]): DocumentNode | undefined {
  if (Buffer.byteLength(text) > MAX_QUERY_BYTES) return void problems.push(`${at} is larger than ${MAX_QUERY_BYTES / 1024} KiB`);
  if (graphqlNestingDepth(text, MAX_GRAPHQL_NESTING) > MAX_GRAPHQL_NESTING)
    return void problems.push(`${at} nests {, ( or [ more than ${MAX_GRAPHQL_NESTING} levels deep (the limit for GraphQL documents)`);
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof GraphQLError) return void problems.push(`${at} does not parse: ${located(error)}`);
    throw error;
  }
}

/** Adds a line per validation error of `document` to `problems`; true when it validates. */
export function validatesAgainst(schema: GraphQLSchema, document: DocumentNode, at: string, problems: string[]): boolean {
  const errors = validate(schema, document);
  for (const error of errors) problems.push(`${at} does not validate against the app's schema: ${located(error)}`);
  return errors.length === 0;
}
