/**
 * Enum mappings (`{"Level": {"LOW": 0}}`): arguments arrive as value names and are read as stored
 * values; stored values read from documents are answered as value names.
 */
import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
} from 'graphql';
import { type GraphqlApp } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { canonicalKey } from '../values/ejson.js';

interface EnumMapping {
  readonly toStored: Map<string, unknown>;
  readonly toName: Map<string, string>;
}

/** The app's enum mappings by enum type name, both ways. */
export function enumMappings(schema: GraphQLSchema, app: GraphqlApp): Map<string, EnumMapping> {
  const enumMaps = new Map<string, EnumMapping>();
  for (const [typeName, mappings] of Object.entries(app.mappings)) {
    const type = schema.getType(typeName);
    if (!type || !isEnumType(type)) continue;
    const toStored = new Map<string, unknown>();
    const toName = new Map<string, string>();
    for (const [name, value] of Object.entries(mappings)) {
      toStored.set(name, value);
      toName.set(canonicalKey(value), name);
    }
    enumMaps.set(typeName, { toStored, toName });
  }
  return enumMaps;
}

/** Enum arguments arrive as value names; mappings want the stored values. */
export function argsInternalizer(field: GraphQLField<unknown, unknown>, enumMaps: Map<string, EnumMapping>): (args: Record<string, unknown>) => Record<string, unknown> {
  if (enumMaps.size === 0 || !field.args.some((a) => involvesMappedEnum(a.type, enumMaps, new Set()))) return (args) => args;
  const convert = (type: GraphQLInputType, value: unknown): unknown => {
    if (value === null || value === undefined) return value;
    const t = getNullableType(type);
    if (isListType(t)) return Array.isArray(value) ? value.map((v) => convert(t.ofType, v)) : convert(t.ofType, value);
    if (isEnumType(t)) {
      const m = enumMaps.get(t.name);
      return m && typeof value === 'string' && m.toStored.has(value) ? m.toStored.get(value) : value;
    }
    if (isInputObjectType(t) && isPlainObject(value)) {
      const out: Record<string, unknown> = {};
      const fields = t.getFields();
      for (const [k, v] of Object.entries(value)) out[k] = fields[k] ? convert(fields[k].type, v) : v;
      return out;
    }
    return value;
  };
  const defs = new Map<string, GraphQLArgument>(field.args.map((a) => [a.name, a]));
  return (args) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(args)) {
      const def = defs.get(k);
      out[k] = def ? convert(def.type, v) : v;
    }
    return out;
  };
}

function involvesMappedEnum(type: GraphQLInputType, enumMaps: Map<string, EnumMapping>, seen: Set<string>): boolean {
  const named = getNamedType(type);
  if (isEnumType(named)) return enumMaps.has(named.name);
  if (isInputObjectType(named)) {
    if (seen.has(named.name)) return false;
    seen.add(named.name);
    return Object.values(named.getFields()).some((f) => involvesMappedEnum(f.type, enumMaps, seen));
  }
  return false;
}

/** Stored enum values → value names, for fields whose type is a mapped enum (or a list of one). */
export function outputEnumMapper(type: GraphQLOutputType, enumMaps: Map<string, EnumMapping>): ((value: unknown) => unknown) | undefined {
  const named = getNamedType(type);
  if (!isEnumType(named)) return undefined;
  const m = enumMaps.get(named.name);
  if (!m) return undefined;
  const map = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(map);
    if (value === null || value === undefined) return value;
    return m.toName.get(canonicalKey(value)) ?? value;
  };
  return map;
}
