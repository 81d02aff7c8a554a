/**
 * Unions and interfaces mapped as RESTHeart maps them: `{"Course": {"$typeResolver": {"InternalCourse":
 * "not field-exists(sub.external)", "ExternalCourse": "field-eq(field=sub.external, value=true)"}}}`.
 * Checked at write (every member mapped, predicates parse, none unreachable; overlaps are warnings
 * naming the type that wins) and installed as graphql-js `resolveType` functions (first matching
 * entry, in the order written, as RESTHeart).
 */
import { GraphQLError, isInterfaceType, isUnionType, type GraphQLAbstractType, type GraphQLSchema } from 'graphql';
import { isPlainObject } from '../../../util/objects.js';
import { analyzeResolver, resolveEntry, type ResolverEntry } from './analyze.js';
import { parsePredicate, PredicateSyntaxError } from './predicate.js';

const TYPE_RESOLVER_KEY = '$typeResolver';

function possibleTypeNames(schema: GraphQLSchema, type: GraphQLAbstractType): string[] {
  return schema.getPossibleTypes(type).map((t) => t.name);
}

/** Parses a resolver mapping, pushing problems (with paths); undefined when it is unusable. */
export function checkTypeResolver(
  path: string,
  schema: GraphQLSchema,
  type: GraphQLAbstractType,
  mapping: Record<string, unknown>,
  /** Where problems (the mapping is refused) and warnings (it is saved) are pushed. */
  found: { readonly problems: string[]; readonly warnings: string[] },
): ResolverEntry[] | undefined {
  const { problems, warnings } = found;
  const kind = isUnionType(type) ? 'union' : 'interface';
  const members = possibleTypeNames(schema, type);
  for (const key of Object.keys(mapping)) {
    if (key !== TYPE_RESOLVER_KEY) problems.push(`${path}.${key}: a ${kind} mapping holds only "${TYPE_RESOLVER_KEY}"`);
  }
  const raw = mapping[TYPE_RESOLVER_KEY];
  if (raw === undefined) {
    problems.push(`${path}: missing ${TYPE_RESOLVER_KEY} for ${kind} ${type.name} (an object {"<type>": "<predicate>"} for each of ${members.join(', ')})`);
    return undefined;
  }
  const rpath = `${path}.${TYPE_RESOLVER_KEY}`;
  if (!isPlainObject(raw)) {
    problems.push(`${rpath} must be an object {"<type>": "<predicate>"}`);
    return undefined;
  }
  const before = problems.length;
  const entries: ResolverEntry[] = [];
  for (const [name, text] of Object.entries(raw)) {
    if (!members.includes(name)) {
      const what = kind === 'union' ? `a member of union ${type.name}` : `an object type implementing ${type.name}`;
      problems.push(`${rpath}.${name}: ${name} is not ${what} (${members.join(', ') || 'none'}), so it can never be resolved`);
      continue;
    }
    if (typeof text !== 'string') {
      problems.push(`${rpath}.${name} must be a predicate string such as "field-exists(a.b)"`);
      continue;
    }
    try {
      entries.push({ type: name, predicate: parsePredicate(text) });
    } catch (error) {
      if (!(error instanceof PredicateSyntaxError)) throw error;
      problems.push(`${rpath}.${name}: error parsing ${TYPE_RESOLVER_KEY} predicate "${text}": ${error.message}`);
    }
  }
  const missing = members.filter((m) => !(m in raw));
  if (missing.length > 0) {
    const what = kind === 'union' ? 'all union members' : 'all objects implementing it';
    problems.push(`${rpath} for ${kind} ${type.name} does not map ${what}: ${missing.join(', ')} would be unreachable`);
  }
  if (problems.length === before) {
    const analysis = analyzeResolver(rpath, entries);
    problems.push(...analysis.problems);
    warnings.push(...analysis.warnings);
  }
  return problems.length === before ? entries : undefined;
}

/** Every union and interface of the schema; each needs a resolver (RESTHeart requires one too). */
export function abstractTypes(schema: GraphQLSchema): GraphQLAbstractType[] {
  return Object.values(schema.getTypeMap()).filter((t): t is GraphQLAbstractType => !t.name.startsWith('__') && (isUnionType(t) || isInterfaceType(t)));
}

/** Installs resolveType on every union and interface from its (validated) mapping. */
export function installTypeResolvers(schema: GraphQLSchema, mappings: Record<string, unknown>): void {
  for (const type of abstractTypes(schema)) {
    const problems: string[] = [];
    const entries = checkTypeResolver(`mappings.${type.name}`, schema, type, (mappings[type.name] ?? {}) as Record<string, unknown>, { problems, warnings: [] });
    if (!entries) continue; // validation refused the app already
    const name = type.name;
    type.resolveType = (value) => {
      const found = resolveEntry(entries, value);
      if (found !== undefined) return found;
      throw new GraphQLError(`no ${TYPE_RESOLVER_KEY} predicate of ${name} matches this document, so its type is unknown`, {
        extensions: { code: 'TYPE_UNRESOLVED' },
      });
    };
  }
}
