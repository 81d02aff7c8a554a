/**
 * RESTHeart's keys of an app's `mcp` block at write (SPEC §11.1): `{"enabled": true, "description":
 * "...", "examples": [{"description": "...", "args": {"body": {"query": "...", "variables"?: {...},
 * "operationName"?: "..."}}}]}`, accepted unchanged beside Outrigger's own `tools`/`mutations`.
 * With `enabled: true` the app is one read-only tool, `<uri>_query` (queryToolName). Every problem
 * names its path; an example's query must parse and validate against the app's schema, since an
 * agent copies it. An example that is a mutation is accepted with a warning (RESTHeart's own
 * server may run it) and left out of the tool's description, as the tool refuses mutations.
 */
import { Kind, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { parseStoredOperation, validatesAgainst } from './operation-problems.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { isPlainObject } from '../../util/objects.js';
import type { McpExample, McpRestheartKeys } from '../app-document.js';

export const RESTHEART_FIELDS = ['enabled', 'description', 'examples'];
const EXAMPLE_FIELDS = ['description', 'args'];
const ARGS_FIELDS = ['body'];
const BODY_FIELDS = ['query', 'variables', 'operationName'];
/** An agent reads every example in the tool's description: a few, each a query's size at most. */
export const MAX_EXAMPLES = 20;
const MAX_DESCRIPTION_CHARS = 4096;

/** The tool an enabled RESTHeart block makes: the app's uri with anything outside `[A-Za-z0-9_-]` as `_`, then `_query`. */
export function queryToolName(uri: string): string {
  return `${uri.replace(/[^A-Za-z0-9_-]/g, '_')}_query`;
}

/** True when `raw` (an object) carries any of RESTHeart's keys. */
export function hasRestheartKeys(raw: Record<string, unknown>): boolean {
  return RESTHEART_FIELDS.some((key) => raw[key] !== undefined);
}

/** Checks RESTHeart's keys of the block; pushes problems (with their paths) and warnings; answers them as given. */
export function checkRestheartKeys(raw: Record<string, unknown>, schema: GraphQLSchema | undefined, problems: string[], warnings: string[]): McpRestheartKeys {
  const out: McpRestheartKeys = {};
  if (raw.enabled !== undefined) {
    if (typeof raw.enabled !== 'boolean') problems.push('mcp.enabled must be true or false (whether agents are offered the app as one <uri>_query tool)');
    else out.enabled = raw.enabled;
  }
  if (raw.description !== undefined) {
    if (typeof raw.description !== 'string') problems.push('mcp.description must be a string: what agents read about the app');
    else if (raw.description.length > MAX_DESCRIPTION_CHARS) problems.push(`mcp.description is longer than ${MAX_DESCRIPTION_CHARS} characters`);
    else out.description = raw.description;
  }
  if (raw.examples !== undefined) {
    if (!Array.isArray(raw.examples)) problems.push('mcp.examples must be an array of {"description", "args": {"body": {"query"}}}');
    else if (raw.examples.length > MAX_EXAMPLES) problems.push(`mcp.examples holds ${raw.examples.length} examples; at most ${MAX_EXAMPLES}`);
    else {
      const before = problems.length;
      raw.examples.forEach((example, i) => checkExample(`mcp.examples[${i}]`, example, schema, problems, warnings));
      if (problems.length === before) out.examples = raw.examples as McpExample[];
    }
  }
  return out;
}

function unknownKeys(at: string, value: Record<string, unknown>, allowed: string[], what: string, problems: string[]): void {
  for (const key of Object.keys(value)) if (!allowed.includes(key)) problems.push(`${at}.${key} is not a field of ${what} (allowed: ${allowed.join(', ')})${suggest(key, allowed)}`);
}

function checkExample(at: string, example: unknown, schema: GraphQLSchema | undefined, problems: string[], warnings: string[]): void {
  if (!isPlainObject(example)) return void problems.push(`${at} must be an object {"description", "args": {"body": {"query"}}}`);
  unknownKeys(at, example, EXAMPLE_FIELDS, 'an example', problems);
  if (example.description !== undefined && typeof example.description !== 'string') problems.push(`${at}.description must be a string`);
  const args = example.args;
  if (!isPlainObject(args)) return void problems.push(`${at}.args must be an object {"body": {"query", "variables"?}}`);
  unknownKeys(`${at}.args`, args, ARGS_FIELDS, "an example's args", problems);
  const body = args.body;
  if (!isPlainObject(body)) return void problems.push(`${at}.args.body must be an object {"query", "variables"?, "operationName"?}`);
  unknownKeys(`${at}.args.body`, body, BODY_FIELDS, "an example's body", problems);
  if (body.variables !== undefined && body.variables !== null && !isPlainObject(body.variables)) problems.push(`${at}.args.body.variables must be an object`);
  if (body.operationName !== undefined && body.operationName !== null && typeof body.operationName !== 'string') problems.push(`${at}.args.body.operationName must be a string`);
  if (typeof body.query !== 'string' || body.query.trim() === '') return void problems.push(`${at}.args.body.query must be the GraphQL text of the example`);
  const operation = checkQuery(`${at}.args.body.query`, body.query, typeof body.operationName === 'string' ? body.operationName : undefined, schema, problems);
  if (operation && operation.operation !== 'query') warnings.push(`${at} is a ${operation.operation}: the <uri>_query tool is read-only, so agents are not shown it`);
}

/** Parses and validates an example's query; answers the operation it runs. */
function checkQuery(at: string, text: string, operationName: string | undefined, schema: GraphQLSchema | undefined, problems: string[]): OperationDefinitionNode | undefined {
  const document = parseStoredOperation(at, text, problems);
  if (document === undefined) return undefined;
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName === undefined ? (operations.length === 1 ? operations[0] : undefined) : operations.find((o) => o.name?.value === operationName);
  if (!operation)
    return void problems.push(
      `${at} ${operationName === undefined ? `holds ${operations.length} operations; name one with operationName` : `has no operation named ${JSON.stringify(operationName)}`}`,
    );
  if (!schema) return operation;
  return validatesAgainst(schema, document, at, problems) ? operation : undefined;
}
