/**
 * The tools this replica offers (SPEC §11): built from the GraphQL app documents each time the
 * app store loads (at start, on this replica's writes, and on the change bus's notices from other
 * replicas, the same path that keeps the GraphQL registry fresh), so a saved, disabled or deleted
 * app shows in `tools/list` as soon as it is served or stops being served. An app's tools are
 * derived once per app version. Hidden: disabled apps, documents that no longer validate, and
 * mutations of apps without `mcp.mutations: true`. A name two enabled apps both use (refused at
 * write; possible only through hand edits) goes to the app first in `_id` order.
 */
import { Kind, parse, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { ToolAnnotations } from '@modelcontextprotocol/server';
import type { GraphqlApp, McpToolDefinition } from '../graphql/app-document.js';
import { appVersion } from '../graphql/compile/compile-app.js';
import { validateAppWithSchema, type ValidateAppOptions } from '../graphql/document/validate-app.js';
import type { CompiledWrite } from '../graphql/writes/run.js';
import { compileWrites } from '../graphql/writes/compile.js';
import { inputSchemaOf, withIdempotencyKey, type JsonSchema } from './input-schema.js';
import { queryToolParts } from './query-tool.js';

export interface CatalogueTool {
  readonly name: string;
  readonly description: string;
  /** The app's `_id` and the uri it is served at (`/graphql/<uri>`). */
  readonly app: { readonly id: string; readonly uri: string };
  readonly query: string;
  readonly operationName: string | null;
  readonly kind: 'query' | 'mutation';
  readonly inputSchema: JsonSchema & { type: 'object' };
  readonly annotations: ToolAnnotations;
  /** The backend writes a mutation tool's operation makes, one per root field (none for a query): what the write policy decides (may-call.ts). */
  readonly writes: readonly ToolWrite[];
  /** RESTHeart's `<uri>_query` (SPEC §11.1): the agent sends the query (`query` is empty here), and only queries run. */
  readonly anyQuery: boolean;
  /** A mutation tool's `idempotencyKey` argument (SPEC §14): in its input schema, sent as the `Idempotency-Key` header, not a variable. */
  readonly takesIdempotencyKey: boolean;
}

/** One backend write as the REST request it is, less its arguments (run.ts sends it). */
export interface ToolWrite {
  readonly method: 'POST' | 'PATCH' | 'DELETE';
  readonly db: string;
  readonly collection: string;
  /** `POST {collectionPath}`, `{collectionPath}/<id>`, or the bulk `{collectionPath}/*`. */
  readonly target: 'collection' | 'document' | 'bulk';
  /** An update or delete answering the document reads it first, under the caller's read permission. */
  readonly readsDocument: boolean;
}

/** Update operators whose repetition leaves the document as the first application left it. */
const IDEMPOTENT_UPDATES = new Set(['$set', '$unset']);

export class ToolCatalogue {
  private byName = new Map<string, CatalogueTool>();
  private readonly perApp = new Map<string, { version: string; tools: CatalogueTool[] }>();

  constructor(
    private readonly options: ValidateAppOptions,
    private readonly onProblem: (appId: string, problem: string) => void = () => {},
  ) {}

  /** Replaces every tool from the apps as stored. */
  rebuild(apps: Iterable<GraphqlApp & { _id: string }>): void {
    const byName = new Map<string, CatalogueTool>();
    const keep = new Set<string>();
    for (const app of [...apps].sort((a, b) => a._id.localeCompare(b._id))) {
      keep.add(app._id);
      if (app.descriptor?.enabled === false || !app.mcp) continue;
      for (const tool of this.toolsOf(app)) {
        const owner = byName.get(tool.name);
        if (owner) this.onProblem(app._id, `the tool name ${JSON.stringify(tool.name)} is also a tool of the app ${JSON.stringify(owner.app.id)}, which keeps it`);
        else byName.set(tool.name, tool);
      }
    }
    for (const id of [...this.perApp.keys()]) if (!keep.has(id)) this.perApp.delete(id);
    this.byName = byName;
  }

  list(): Iterable<CatalogueTool> {
    return this.byName.values();
  }

  get(name: string): CatalogueTool | undefined {
    return this.byName.get(name);
  }

  get size(): number {
    return this.byName.size;
  }

  private toolsOf(app: GraphqlApp & { _id: string }): CatalogueTool[] {
    const version = appVersion(app);
    const cached = this.perApp.get(app._id);
    if (cached?.version === version) return cached.tools;
    const tools = this.derive(app);
    this.perApp.set(app._id, { version, tools });
    return tools;
  }

  private derive(app: GraphqlApp & { _id: string }): CatalogueTool[] {
    const validated = validateAppWithSchema(app, this.options);
    if (!validated.ok) {
      this.onProblem(app._id, `the app does not validate, so its tools are not offered: ${validated.problems.join('; ')}`);
      return [];
    }
    const { schema } = validated;
    const block = validated.app.mcp;
    const compiled = compileWrites(schema, validated.app, this.options.defaultDb);
    const tools: CatalogueTool[] = [];
    for (const definition of block?.tools ?? []) {
      const document = parse(definition.query);
      const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
      if (operation.operation === 'mutation' && block?.mutations !== true) continue;
      const fields = rootFields(document, operation);
      const variables = inputSchemaOf(schema, document, operation);
      const keyed = operation.operation === 'mutation' ? withIdempotencyKey(variables) : { schema: variables, added: false };
      tools.push({
        name: definition.name,
        description: definition.description,
        app: { id: app._id, uri: validated.app.descriptor.uri },
        query: definition.query,
        operationName: operation.name?.value ?? null,
        kind: operation.operation === 'mutation' ? 'mutation' : 'query',
        inputSchema: keyed.schema,
        annotations: annotationsOf(definition, operation, fields, app),
        writes: operation.operation === 'mutation' ? fields.flatMap((field) => writeOf(compiled.get(field))) : [],
        anyQuery: false,
        takesIdempotencyKey: keyed.added,
      });
    }
    if (block?.enabled === true) tools.push(queryTool(validated.app, app._id));
    return tools;
  }
}

/** RESTHeart's `<uri>_query` (query-tool.ts): the agent's own query, read-only. */
function queryTool(app: GraphqlApp, id: string): CatalogueTool {
  const { name, description, inputSchema } = queryToolParts(app);
  return {
    name,
    description,
    app: { id, uri: app.descriptor.uri },
    query: '',
    operationName: null,
    kind: 'query',
    inputSchema,
    annotations: { title: name, readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    writes: [],
    anyQuery: true,
    takesIdempotencyKey: false,
  };
}

function writeOf(write: CompiledWrite | undefined): ToolWrite[] {
  if (!write) return [];
  const { db, collection, kind } = write;
  const readsDocument = write.form === 'object' && (kind === 'update' || kind === 'delete');
  if (kind === 'insert' || kind === 'insertMany') return [{ method: 'POST', db, collection, target: 'collection', readsDocument }];
  const method = kind === 'update' || kind === 'updateMany' ? 'PATCH' : 'DELETE';
  return [{ method, db, collection, target: kind === 'update' || kind === 'delete' ? 'document' : 'bulk', readsDocument }];
}

/**
 * SPEC §11: a query is read-only; a mutation is destructive when one of its root fields updates or
 * deletes, not when it only inserts; idempotent when every root field deletes or only sets/unsets.
 * No tool reaches beyond this service's backend (`openWorldHint: false`).
 */
function annotationsOf(definition: McpToolDefinition, operation: OperationDefinitionNode, fields: string[], app: GraphqlApp): ToolAnnotations {
  const title = operation.name?.value ?? definition.name;
  if (operation.operation !== 'mutation') return { title, readOnlyHint: true, idempotentHint: true, openWorldHint: false };
  const mappings = (app.mappings.Mutation ?? {}) as Record<string, Record<string, unknown> | undefined>;
  let destructive = false;
  let idempotent = true;
  for (const field of fields) {
    const mapping = mappings[field] ?? {};
    if (mapping.delete !== undefined) destructive = true;
    else if (mapping.update !== undefined) {
      destructive = true;
      const operators = Object.keys((mapping.update as Record<string, unknown> | null) ?? {});
      if (!operators.every((o) => IDEMPOTENT_UPDATES.has(o))) idempotent = false;
    } else idempotent = false; // an insert makes a new document each time
  }
  return { title, readOnlyHint: false, destructiveHint: destructive, idempotentHint: idempotent, openWorldHint: false };
}

/** The root fields an operation selects, through fragments and inline fragments (introspection fields left out). */
function rootFields(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]));
  const names: string[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (!selection.name.value.startsWith('__')) names.push(selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return names;
}
