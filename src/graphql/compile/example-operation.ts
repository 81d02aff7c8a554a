/**
 * The operation an app's GraphiQL page opens on (SPEC §15), the app's own where it has one:
 * the first query among its trusted documents (nothing else would run), else the first of
 * RESTHeart's `mcp.examples`, else the first query among its `mcp.tools`, else one written from
 * the schema: the first root field that needs no argument, with up to eight of its leaf fields.
 */
import { getNamedType, getNullableType, isLeafType, isNonNullType, isObjectType, parse, type GraphQLField, type GraphQLSchema, OperationTypeNode, Kind } from 'graphql';
import type { GraphqlApp } from '../app-document.js';

export interface ExampleOperation {
  readonly query: string;
  readonly variables?: Readonly<Record<string, unknown>>;
  readonly operationName?: string;
}

const MAX_LEAVES = 8;

export function exampleOperation(app: GraphqlApp, schema: GraphQLSchema): ExampleOperation {
  const trusted = app.descriptor.trustedDocuments;
  if (trusted !== undefined) {
    const text = trusted.find((t) => !t.startsWith('sha256:') && isQuery(t));
    return { query: text ?? '# This app runs only its trusted documents, and none of them is a query.\n' };
  }
  const example = app.mcp?.examples?.find((e) => isQuery(e.args.body.query));
  if (example) {
    const { query, variables, operationName } = example.args.body;
    return { query, ...(variables ? { variables } : {}), ...(operationName ? { operationName } : {}) };
  }
  const tool = app.mcp?.tools?.find((t) => isQuery(t.query));
  if (tool) return { query: tool.query };
  return { query: fromSchema(schema) };
}

function isQuery(text: string): boolean {
  try {
    return parse(text).definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === OperationTypeNode.QUERY);
  } catch {
    return false;
  }
}

const needsArguments = (field: GraphQLField<unknown, unknown>) => field.args.some((a) => isNonNullType(a.type) && a.defaultValue === undefined);

function fromSchema(schema: GraphQLSchema): string {
  const fields = Object.values(schema.getQueryType()?.getFields() ?? {}).filter((f) => !needsArguments(f));
  // A field returning objects shows more than a scalar one; either beats __typename.
  const field = fields.find((f) => isObjectType(getNamedType(f.type))) ?? fields[0];
  if (field === undefined) return 'query Example {\n  __typename\n}\n';
  const type = getNamedType(getNullableType(field.type));
  // A page of a few, where the field takes a size (RESTHeart's apps name it `limit`).
  const size = field.args.find((a) => (a.name === 'limit' || a.name === 'first') && getNamedType(a.type).name === 'Int');
  const call = size ? `${field.name}(${size.name}: 5)` : field.name;
  if (!isObjectType(type)) return `query Example {\n  ${call}\n}\n`;
  const leaves = Object.values(type.getFields())
    .filter((f) => isLeafType(getNamedType(f.type)) && !needsArguments(f))
    .slice(0, MAX_LEAVES)
    .map((f) => f.name);
  return `query Example {\n  ${call} {\n${(leaves.length > 0 ? leaves : ['__typename']).map((n) => `    ${n}`).join('\n')}\n  }\n}\n`;
}
