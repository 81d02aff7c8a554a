/**
 * RESTHeart's `mcp` block (SPEC §11.1): an app with `mcp.enabled: true` is offered as one tool,
 * `<uri>_query`, whose input is the GraphQL request itself (`query`, `variables`,
 * `operationName`) and whose description is the block's description, the app's schema and its
 * examples, so an agent can write the query it needs. It is read-only: a document holding a
 * mutation or subscription is refused before anything is sent. The call then goes through the same
 * door as every other tool (call-graphql.ts), so the ACL, readFilter, cost limit and rate limits
 * decide it as they would decide the same `POST /graphql/<uri>`.
 */
import { GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import type { GraphqlApp } from '../graphql/app-document.js';
import { queryToolName } from '../graphql/document/mcp-restheart.js';

const INPUT_SCHEMA = {
  type: 'object' as const,
  properties: {
    query: { type: 'string' as const, description: "A GraphQL query against the schema in this tool's description (queries only: the tool is read-only)" },
    variables: { type: ['object' as const, 'null' as const], description: "The query's variables" },
    operationName: { type: ['string' as const, 'null' as const], description: 'Which operation of the query to run, when it holds several' },
  },
  required: ['query'],
  additionalProperties: false as const,
};

/** What the tool an enabled RESTHeart block offers is called, says and takes (the catalogue makes it a tool). */
export function queryToolParts(app: GraphqlApp): { name: string; description: string; inputSchema: typeof INPUT_SCHEMA } {
  return { name: queryToolName(app.descriptor.uri), description: describe(app), inputSchema: INPUT_SCHEMA };
}

function describe(app: GraphqlApp): string {
  const mcp = app.mcp ?? {};
  const parts = [mcp.description?.trim() || app.descriptor.description?.trim() || `Runs a GraphQL query against the app served at /graphql/${app.descriptor.uri}.`];
  parts.push(`The app's schema (GraphQL SDL):\n${app.schema.trim()}`);
  const examples = (mcp.examples ?? []).filter((example) => readOnlyProblem(example.args.body.query) === null);
  if (examples.length > 0) {
    const lines = examples.map((example) => {
      const { query, variables } = example.args.body;
      const vars = variables && Object.keys(variables).length > 0 ? `\n  variables: ${JSON.stringify(variables)}` : '';
      return `- ${example.description?.trim() || 'Example'}:\n  ${query.trim()}${vars}`;
    });
    parts.push(`Examples:\n${lines.join('\n')}`);
  }
  return parts.join('\n\n');
}

/**
 * Why a query sent to the tool is refused, or null: any operation in the document that is not a
 * query, whichever one `operationName` picks (a document that holds a mutation is not a read, and
 * refusing it whole leaves nothing to get wrong about which operation runs). A document that does
 * not parse is left to the GraphQL door, which answers its syntax error.
 */
export function readOnlyProblem(query: string): string | null {
  let operations: OperationDefinitionNode[];
  try {
    operations = parse(query).definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  } catch (error) {
    if (error instanceof GraphQLError) return null;
    throw error;
  }
  const other = operations.find((o) => o.operation !== 'query');
  return other ? `the tool is read-only: the document holds a ${other.operation}${other.name ? ` (${other.name.value})` : ''}, and only queries run through it` : null;
}

/** The GraphQL request a call of the tool sends, from arguments already checked against INPUT_SCHEMA. */
export function requestOf(args: Record<string, unknown>): { query: string; variables: unknown; operationName: string | null } {
  return { query: args.query as string, variables: args.variables ?? null, operationName: typeof args.operationName === 'string' ? args.operationName : null };
}
