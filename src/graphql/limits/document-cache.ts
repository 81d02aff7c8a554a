/**
 * Parsed and validated query documents, cached for every app of a replica under one budget
 * (issue 25). An entry is weighed by its parsed size, not its text: the AST, its locations and its
 * token list take about 240 bytes per token (measured: a 78 KiB query of 40,000 short tokens
 * holds 19.4 MB once parsed, 242 bytes per token), so weighing by text length let 60 big queries
 * grow the heap by ~1 GB. The weight is the token count (a walk of the token list, made once per
 * parse) times PARSED_BYTES_PER_TOKEN.
 */
import { GraphQLError, parse, validate, type DocumentNode, type GraphQLSchema, type ValidationRule } from 'graphql';
import { LruCache } from '../../util/lru.js';
import { aliasLimitError } from './aliases.js';

/** A parsed query and what validation said about it. */
export interface PreparedDocument {
  readonly document?: DocumentNode;
  readonly syntaxErrors?: readonly GraphQLError[];
  readonly validationErrors?: readonly GraphQLError[];
}

/** Heap bytes one token of a parsed document holds (AST node, location, token), measured on graphql-js 16. */
export const PARSED_BYTES_PER_TOKEN = 250;
/** Largest number of tokens a query may have (protects the parser; 100 KiB of text is far below). */
const MAX_TOKENS = 50_000;

/** Defaults for all apps together: 64 MiB of parsed documents, 2000 entries. */
const DOCUMENT_CACHE_BYTES = 64 * 1024 * 1024;
const DOCUMENT_CACHE_ENTRIES = 2000;

/** One cache shared by the apps of a registry; keys carry the app's version. */
export class DocumentCache {
  private readonly lru: LruCache<string, PreparedDocument>;

  constructor(maxEntries = DOCUMENT_CACHE_ENTRIES, maxBytes = DOCUMENT_CACHE_BYTES) {
    this.lru = new LruCache(maxEntries, maxBytes);
  }

  get size(): number {
    return this.lru.size;
  }

  /** Estimated heap bytes of the cached documents. */
  get bytes(): number {
    return this.lru.weight;
  }

  /**
   * Parses and validates `query` for the app of `version`, from the cache when seen before. A
   * document over `maxAliases` is refused for that alone, before graphql-js validates it.
   */
  prepare(version: string, query: string, schema: GraphQLSchema, rules: readonly ValidationRule[], opts: { maxAliases: number; hideSuggestions: boolean }): PreparedDocument {
    const key = `${version}\n${query}`;
    const hit = this.lru.get(key);
    if (hit) return hit;
    let prepared: PreparedDocument;
    let weight = query.length * 2;
    try {
      const document = parse(query, { maxTokens: MAX_TOKENS });
      weight += tokenCount(document) * PARSED_BYTES_PER_TOKEN;
      const tooMany = aliasLimitError(document, opts.maxAliases);
      const errors = tooMany ? [tooMany] : validate(schema, document, rules, { hideSuggestions: opts.hideSuggestions });
      prepared = errors.length > 0 ? { document, validationErrors: errors } : { document };
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      prepared = { syntaxErrors: [error] };
    }
    this.lru.set(key, prepared, weight);
    return prepared;
  }
}

/** Tokens of a parsed document (its token list is linked from the document's location). */
export function tokenCount(document: DocumentNode): number {
  let n = 0;
  for (let token = document.loc?.startToken ?? null; token !== null; token = token.next) n++;
  return n;
}
