/**
 * A tool's input schema: JSON Schema derived from its operation's variables (SPEC §11). Scalars
 * and enums become JSON types, a non-null variable without a default is required, defaults are
 * `default`, input objects are closed objects (`additionalProperties: false`, so an agent cannot
 * slip an operator key such as `$gt` into one), lists are arrays of at most MAX_LIST_ITEMS, and
 * descriptions come from the schema: the argument a variable is passed to, the input field, the
 * enum or the scalar. A nullable position also accepts `null` (OpenAI's strict mode sends null for
 * an optional parameter). Only the keywords check-arguments.ts implements are ever emitted.
 */
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  isSpecifiedScalarType,
  Kind,
  TypeInfo,
  typeFromAST,
  valueFromASTUntyped,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

/** The subset of JSON Schema (2020-12) a tool's input uses. */
export interface JsonSchema {
  type?: JsonType | JsonType[];
  description?: string;
  enum?: Array<string | null>;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: false;
  items?: JsonSchema;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  default?: unknown;
}
export type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

/** Longest list an agent may pass in one argument: lists fan out into filters and writes. */
export const MAX_LIST_ITEMS = 1000;
const INT_RANGE = { minimum: -2147483648, maximum: 2147483647 };

/** GraphQL scalars (built-in and RESTHeart's BSON ones) as JSON values; unknown custom scalars take any value. */
const SCALARS: Record<string, JsonSchema> = {
  Int: { type: 'integer', ...INT_RANGE },
  Float: { type: 'number' },
  String: { type: 'string' },
  Boolean: { type: 'boolean' },
  ID: { type: ['string', 'integer'] },
  ObjectId: { type: 'string', pattern: '^[0-9a-fA-F]{24}$', description: 'an ObjectId: 24 hexadecimal digits' },
  DateTime: { type: ['string', 'integer'], description: 'an ISO-8601 date-time with offset (2024-05-01T10:00:00Z) or epoch milliseconds' },
  Long: { type: ['integer', 'string'], description: 'a 64-bit integer (as a string beyond 2^53)' },
  Decimal128: { type: ['string', 'number'], description: 'a decimal number' },
  Regex: { type: 'string' },
  BsonDocument: { type: 'object', description: 'a JSON object (keys starting with $ are refused outside extended-JSON literals)' },
};

export function inputSchemaOf(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): JsonSchema & { type: 'object' } {
  const usedAt = argumentDescriptions(schema, document);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type as never) as GraphQLInputType | undefined;
    if (!type) continue; // the operation validated at write, so every variable type exists
    const property = typeSchema(type, usedAt.get(name));
    if (definition.defaultValue) property.default = valueFromASTUntyped(definition.defaultValue);
    else if (isNonNullType(type)) required.push(name);
    properties[name] = property;
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

/**
 * SPEC §14: the argument a mutation tool takes beside its variables, passed on as the inner
 * request's `Idempotency-Key` (call-graphql.ts) and never as a variable. Visible ASCII at both
 * ends, spaces inside, 1–255 characters: what a quoted Structured Field string carries.
 */
export const IDEMPOTENCY_ARGUMENT = 'idempotencyKey';
const IDEMPOTENCY_KEY_SCHEMA: JsonSchema = {
  type: 'string',
  pattern: '^[!-~]([ -~]{0,253}[!-~])?$',
  description:
    'Optional: a key you choose (1-255 visible ASCII characters, e.g. a UUID) that makes this call happen once. ' +
    "A retry with the same key and the same arguments gets the first call's result without writing again; the same key with other arguments is refused.",
};

/**
 * A mutation tool's schema with `idempotencyKey` beside its variables; unchanged (and false) when
 * the operation has a variable of that name, which keeps its meaning.
 */
export function withIdempotencyKey(schema: JsonSchema & { type: 'object' }): { schema: JsonSchema & { type: 'object' }; added: boolean } {
  if (schema.properties && Object.hasOwn(schema.properties, IDEMPOTENCY_ARGUMENT)) return { schema, added: false };
  return { schema: { ...schema, properties: { ...schema.properties, [IDEMPOTENCY_ARGUMENT]: IDEMPOTENCY_KEY_SCHEMA } }, added: true };
}

/** A mutation tool's schema for a caller `idempotency.required` asks a key of: `idempotencyKey` among the required arguments. */
export function withIdempotencyKeyRequired(schema: JsonSchema & { type: 'object' }): JsonSchema & { type: 'object' } {
  return { ...schema, required: [...(schema.required ?? []), IDEMPOTENCY_ARGUMENT] };
}

function typeSchema(type: GraphQLInputType, description: string | undefined, seen: ReadonlySet<string> = new Set()): JsonSchema {
  const nullable = !isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  let out: JsonSchema;
  if (isListType(inner)) {
    out = { type: 'array', items: typeSchema(inner.ofType as GraphQLInputType, undefined, seen), maxItems: MAX_LIST_ITEMS };
  } else if (isEnumType(inner)) {
    out = { type: 'string', enum: inner.getValues().map((v) => v.name) };
    description ??= inner.description ?? undefined;
  } else if (isInputObjectType(inner)) {
    // A recursive input type (`input Filter { and: [Filter] }`) is described once; deeper levels take any object.
    if (seen.has(inner.name)) out = { type: 'object', description: `a ${inner.name} (as above)` };
    else {
      const below = new Set([...seen, inner.name]);
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const field of Object.values(inner.getFields())) {
        const property = typeSchema(field.type, field.description ?? undefined, below);
        if (field.defaultValue !== undefined) property.default = field.defaultValue;
        else if (isNonNullType(field.type)) required.push(field.name);
        properties[field.name] = property;
      }
      out = { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
    }
    description ??= inner.description ?? undefined;
  } else {
    const named = getNamedType(inner);
    out = isScalarType(named) && SCALARS[named.name] ? structuredClone(SCALARS[named.name]!) : {};
    // graphql-js's own scalar descriptions say nothing the JSON type does not.
    if (!isSpecifiedScalarType(named)) description ??= named.description ?? undefined;
  }
  if (description) out.description = out.description && out.description !== description ? `${description} (${out.description})` : description;
  if (nullable && out.type !== undefined) {
    out.type = [...new Set([...[out.type].flat(), 'null' as const])];
    if (out.enum) out.enum = [...out.enum, null];
  }
  return out;
}

/** For each variable, the description of the first argument it is passed to (whole, not inside a list or object). */
function argumentDescriptions(schema: GraphQLSchema, document: DocumentNode): Map<string, string> {
  const found = new Map<string, string>();
  const info = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(info, {
      [Kind.ARGUMENT](node) {
        if (node.value.kind !== Kind.VARIABLE) return;
        const description = info.getArgument()?.description;
        if (description && !found.has(node.value.name.value)) found.set(node.value.name.value, description);
      },
      [Kind.OBJECT_FIELD](node) {
        if (node.value.kind !== Kind.VARIABLE) return;
        const parent = info.getParentInputType();
        const owner = parent ? getNamedType(parent) : undefined;
        const description = owner && isInputObjectType(owner) ? owner.getFields()[node.name.value]?.description : undefined;
        if (description && !found.has(node.value.name.value)) found.set(node.value.name.value, description);
      },
    }),
  );
  return found;
}
