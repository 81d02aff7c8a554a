/**
 * SDL → executable-shape schema: parses the app's SDL, declares the BSON scalars it uses without
 * declaring (as RESTHeart does), builds and validates the schema, and installs scalar coercion.
 */
import { buildASTSchema, GraphQLError, GraphQLScalarType, isScalarType, isSpecifiedScalarType, Kind, parse, validateSchema, type DefinitionNode, type DocumentNode, type GraphQLSchema } from 'graphql';
import { graphqlNestingDepth } from '../../input-limits/graphql-nesting.js';
import { MAX_GRAPHQL_NESTING } from '../../input-limits/limits.js';
import { BSON_SCALAR_NAMES, installScalarCoercion } from './bson-scalars.js';

const BSON_SCALAR_DEFINITIONS = new Map<string, DefinitionNode>(
  parse(BSON_SCALAR_NAMES.map((n) => `scalar ${n}`).join('\n')).definitions.map((d) => [(d as { name: { value: string } }).name.value, d]),
);

/** A GraphQL error with the line and column of its first location (schema and stored-operation problems alike). */
export function located(error: GraphQLError): string {
  const loc = error.locations?.[0];
  return loc ? `${error.message} (line ${loc.line}, column ${loc.column})` : error.message;
}

export type SchemaBuild = { ok: true; schema: GraphQLSchema } | { ok: false; problems: string[] };

/** Builds the app schema; every problem is a sentence prefixed with `schema`. */
export function buildAppSchema(sdl: string): SchemaBuild {
  // graphql-js parses and builds recursively: refuse deep nesting (e.g. [[[[String]]]]) first.
  if (graphqlNestingDepth(sdl, MAX_GRAPHQL_NESTING) > MAX_GRAPHQL_NESTING)
    return { ok: false, problems: [`schema nests {, ( or [ more than ${MAX_GRAPHQL_NESTING} levels deep (the limit for GraphQL documents)`] };
  let document: DocumentNode;
  try {
    document = parse(sdl);
  } catch (error) {
    if (error instanceof GraphQLError) return { ok: false, problems: [`schema is not valid GraphQL SDL: ${located(error)}`] };
    throw error;
  }
  const defined = new Set<string>();
  for (const d of document.definitions) {
    if ('name' in d && d.name && d.kind !== Kind.DIRECTIVE_DEFINITION) defined.add(d.name.value);
  }
  const missing = [...BSON_SCALAR_DEFINITIONS].filter(([name]) => !defined.has(name)).map(([, d]) => d);
  const full: DocumentNode = { ...document, definitions: [...missing, ...document.definitions] };
  let schema: GraphQLSchema;
  try {
    schema = buildASTSchema(full);
  } catch (error) {
    if (error instanceof Error) {
      // assertValidSDL joins every problem with a blank line.
      return { ok: false, problems: error.message.split('\n\n').map((m) => `schema is not a valid GraphQL schema: ${m}`) };
    }
    throw error;
  }
  if (!schema.getQueryType()) {
    return { ok: false, problems: ['schema must define a Query type (e.g. type Query { orders: [Order] }): it is the root of every read'] };
  }
  const errors = validateSchema(schema);
  if (errors.length > 0) {
    return { ok: false, problems: errors.map((e) => `schema is not a valid GraphQL schema: ${located(e)}`) };
  }
  for (const type of Object.values(schema.getTypeMap())) {
    if (isScalarType(type) && !isSpecifiedScalarType(type)) installScalarCoercion(type as GraphQLScalarType);
  }
  return { ok: true, schema };
}
