/**
 * How an app document's stored operations (MCP tools, RESTHeart's `mcp.examples`) are told apart
 * from ones that would fail at call time: the validation errors against the app's schema, each
 * located in the operation's text, as `<at> does not validate …` lines.
 */
import { validate, type DocumentNode, type GraphQLError, type GraphQLSchema } from 'graphql';

/** Adds a line per validation error of `document` to `problems`; true when it validates. */
export function validatesAgainst(schema: GraphQLSchema, document: DocumentNode, at: string, problems: string[]): boolean {
  const errors = validate(schema, document);
  for (const error of errors) problems.push(`${at} does not validate against the app's schema: ${located(error)}`);
  return errors.length === 0;
}

/** A GraphQL error with the line and column of its first location. */
export function located(error: GraphQLError): string {
  const loc = error.locations?.[0];
  return loc ? `${error.message} (line ${loc.line}, column ${loc.column})` : error.message;
}
