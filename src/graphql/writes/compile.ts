/**
 * The mutation fields of a validated app, compiled once per app version: each mapping's kind
 * (insert, bulk insert, update, update many, delete, delete many) and the result its declared
 * type asks for, looked up per request by `plan.ts` and run by `run.ts`.
 */
import type { GraphQLSchema } from 'graphql';
import { type GraphqlApp } from '../app-document.js';
import { isPlainObject } from '../../util/objects.js';
import { resultForm, writeKind } from '../document/mutations.js';
import type { CompiledWrite, WriteMapping } from './run.js';

export function compileWrites(schema: GraphQLSchema, app: GraphqlApp, defaultDb: string): Map<string, CompiledWrite> {
  const out = new Map<string, CompiledWrite>();
  const type = schema.getMutationType();
  if (!type) return out;
  const mappings = app.mappings[type.name] ?? {};
  for (const field of Object.values(type.getFields())) {
    const mapping = mappings[field.name];
    if (!isPlainObject(mapping)) continue;
    const kind = writeKind(mapping, field);
    const form = resultForm(field.type);
    if (!kind || !form) continue; // refused at write; a stored app from before is not compiled
    const m = mapping as unknown as WriteMapping;
    out.set(field.name, { db: m.db ?? defaultDb, collection: m.collection, kind, form, mapping: m });
  }
  return out;
}
