/**
 * An app document's `mcp` block at write (SPEC §11): `{"mutations"?: boolean, "tools": [{name,
 * description, query}]}`. Every problem names its path (`mcp.tools[1].query: ...`): a name of
 * `[A-Za-z0-9_-]{1,64}`, unique in the app (across the service's enabled apps: `toolNameClash`,
 * checked against the stored apps), a description, and one operation that parses and validates
 * against the app's schema. A mutation without `mcp.mutations: true` is accepted and stays hidden
 * (a warning says so); a subscription is refused (a tool answers once).
 */
import { Kind, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { parseStoredOperation, validatesAgainst } from './operation-problems.js';
import { didYouMean as suggest } from '../../util/did-you-mean.js';
import { type GraphqlApp, type McpToolDefinition, type McpToolsBlock } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { checkRestheartKeys, hasRestheartKeys, queryToolName, RESTHEART_FIELDS } from './mcp-restheart.js';

export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Bounds of one app's block: tools an agent's context can hold, and texts as large as a GraphQL query may be. */
export const MAX_TOOLS_PER_APP = 100;
const MAX_DESCRIPTION_CHARS = 4096;
const BLOCK_FIELDS = ['tools', 'mutations', ...RESTHEART_FIELDS];
const TOOL_FIELDS = ['name', 'description', 'query'];

/** Checks `mcp`; pushes problems and warnings; answers the block when it is valid. */
export function checkMcpBlock(raw: unknown, schema: GraphQLSchema | undefined, problems: string[], warnings: string[]): McpToolsBlock | undefined {
  const before = problems.length;
  if (!isPlainObject(raw)) {
    problems.push('mcp must be an object {"tools": [{"name", "description", "query"}], "mutations"?: true|false} and/or RESTHeart\'s {"enabled", "description", "examples"}');
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (!BLOCK_FIELDS.includes(key)) problems.push(`mcp.${key} is not a field of the mcp block (allowed: ${BLOCK_FIELDS.join(', ')})${suggest(key, BLOCK_FIELDS)}`);
  }
  if (raw.mutations !== undefined && typeof raw.mutations !== 'boolean') problems.push('mcp.mutations must be true or false (whether mutation operations become tools)');
  const mutations = raw.mutations === true;
  // RESTHeart's keys may stand beside ours, or alone (SPEC §11.1).
  const restheart = checkRestheartKeys(raw, schema, problems, warnings);
  if (raw.tools === undefined && hasRestheartKeys(raw)) {
    if (problems.length > before) return undefined;
    return { ...restheart, ...(typeof raw.mutations === 'boolean' ? { mutations: raw.mutations } : {}) };
  }
  if (!Array.isArray(raw.tools)) {
    problems.push('mcp.tools must be an array of tools {"name", "description", "query"}');
    return undefined;
  }
  if (raw.tools.length > MAX_TOOLS_PER_APP) problems.push(`mcp.tools holds ${raw.tools.length} tools; at most ${MAX_TOOLS_PER_APP} per app`);
  const seen = new Map<string, number>();
  raw.tools.slice(0, MAX_TOOLS_PER_APP).forEach((tool, i) => {
    const at = `mcp.tools[${i}]`;
    if (!isPlainObject(tool)) return void problems.push(`${at} must be an object {"name", "description", "query"}`);
    for (const key of Object.keys(tool)) {
      if (!TOOL_FIELDS.includes(key)) problems.push(`${at}.${key} is not a field of a tool (allowed: ${TOOL_FIELDS.join(', ')})${suggest(key, TOOL_FIELDS)}`);
    }
    const { name, description, query } = tool;
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) problems.push(`${at}.name must be 1 to 64 letters, digits, _ or - (got ${JSON.stringify(name)})`);
    else if (seen.has(name)) problems.push(`${at}.name ${JSON.stringify(name)} is already the name of mcp.tools[${seen.get(name)}]; tool names are unique`);
    else seen.set(name, i);
    if (typeof description !== 'string' || description.trim() === '') problems.push(`${at}.description must be a non-empty string: it is what an agent reads to choose the tool`);
    else if (description.length > MAX_DESCRIPTION_CHARS) problems.push(`${at}.description is longer than ${MAX_DESCRIPTION_CHARS} characters`);
    if (typeof query !== 'string' || query.trim() === '') return void problems.push(`${at}.query must be the GraphQL text of one operation`);
    const operation = checkOperation(`${at}.query`, query, schema, problems);
    if (operation?.operation === 'mutation' && !mutations) warnings.push(`${at} (${String(name)}) is a mutation: it stays hidden from agents until mcp.mutations is true`);
  });
  if (problems.length > before) return undefined;
  return {
    ...restheart,
    ...(raw.mutations !== undefined ? { mutations } : {}),
    tools: (raw.tools as Record<string, string>[]).map((t) => ({ name: t.name!, description: t.description!, query: t.query! })),
  };
}

/** Parses and validates one tool's operation; pushes each problem with its path and location. */
function checkOperation(at: string, text: string, schema: GraphQLSchema | undefined, problems: string[]): OperationDefinitionNode | undefined {
  const document = parseStoredOperation(at, text, problems);
  if (document === undefined) return undefined;
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operations.length !== 1) return void problems.push(`${at} must hold exactly one operation (it holds ${operations.length}); a tool runs one`);
  const operation = operations[0]!;
  if (operation.operation === 'subscription') return void problems.push(`${at} is a subscription; a tool answers once, so only queries and mutations can be tools`);
  if (!schema) return operation; // the schema's own problems are already reported
  return validatesAgainst(schema, document, at, problems) ? operation : undefined;
}

/** The enabled apps' tools by name (the first app in `_id` order keeps a name another also uses). */
function toolOwners(apps: Iterable<GraphqlApp>, skipId: string | undefined): Map<string, GraphqlApp> {
  const owners = new Map<string, GraphqlApp>();
  const sorted = [...apps].filter((a) => a.descriptor?.enabled !== false && (skipId === undefined || a._id !== skipId)).sort((a, b) => String(a._id).localeCompare(String(b._id)));
  for (const app of sorted) for (const name of toolNamesOf(app)) if (!owners.has(name)) owners.set(name, app);
  return owners;
}

/** The names of an app's tools: its `mcp.tools`, and `<uri>_query` when RESTHeart's block is enabled. */
function toolNamesOf(app: GraphqlApp): string[] {
  const names = (app.mcp?.tools ?? []).map((tool) => tool.name);
  if (app.mcp?.enabled === true) names.push(queryToolName(app.descriptor.uri));
  return names;
}

/** Problems of the candidate's own names: `<uri>_query` must be a valid tool name and not also one of its `mcp.tools`. */
export function ownToolNameProblems(app: GraphqlApp): string[] {
  if (app.mcp?.enabled !== true) return [];
  const name = queryToolName(app.descriptor.uri);
  if (!TOOL_NAME.test(name)) return [`mcp.enabled: the app's tool would be named ${JSON.stringify(name)}, longer than 64 characters; use a shorter descriptor.uri`];
  const i = (app.mcp.tools ?? []).findIndex((tool) => tool.name === name);
  return i < 0 ? [] : [`mcp.tools[${i}].name ${JSON.stringify(name)} is the name of the tool mcp.enabled offers (<uri>_query); choose another`];
}

/**
 * Tool names the candidate (enabled) shares with other enabled apps: one sentence per clash,
 * each naming the path and the app that has the name. Empty for a disabled candidate.
 */
export function toolNameClashes(others: Iterable<GraphqlApp>, candidate: GraphqlApp): string[] {
  if (candidate.descriptor.enabled === false || !candidate.mcp) return [];
  const owners = toolOwners(others, candidate._id);
  const problems: string[] = [];
  (candidate.mcp.tools ?? []).forEach((tool: McpToolDefinition, i) => {
    const owner = owners.get(tool.name);
    if (owner)
      problems.push(`mcp.tools[${i}].name ${JSON.stringify(tool.name)} is already a tool of the GraphQL app ${JSON.stringify(owner._id)}; tool names are unique across the service's enabled apps`);
  });
  if (candidate.mcp.enabled === true) {
    const name = queryToolName(candidate.descriptor.uri);
    const owner = owners.get(name);
    if (owner)
      problems.push(`mcp.enabled: the tool ${JSON.stringify(name)} is already a tool of the GraphQL app ${JSON.stringify(owner._id)}; tool names are unique across the service's enabled apps`);
  }
  return problems;
}
