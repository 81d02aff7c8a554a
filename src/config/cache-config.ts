/**
 * `cache:` (SPEC §12): which backend reads are answered from memory, and the bounds.
 *
 *   rules        `[{name?, when: <§4 condition>, maxAgeSeconds}]`, first match wins; none: no cache
 *   maxBytes     bytes of entries per process (default 64 MiB), least recently used out first
 *   maxEntryBytes  an answer larger than this is never stored (default 1 MiB)
 *   consistency  `local` (default): a write drops reads at once on its replica, within 50 ms on
 *                the others; `strong`: every hit checks the collection's generation in Redis
 */
import { ConditionSyntaxError, parseCondition } from '../condition/index.js';
import { SectionReader } from './reader.js';

export const CACHE_CONSISTENCY = ['local', 'strong'] as const;

export interface CacheRuleConfig {
  /** Named in metrics and Cache-Status-less logs; `rule<index>` when not given. */
  name: string;
  /** The condition's text (§4): which proxied GETs the rule covers. */
  when: string;
  maxAgeSeconds: number;
}

export interface CacheConfig {
  rules: CacheRuleConfig[];
  maxBytes: number;
  maxEntryBytes: number;
  consistency: (typeof CACHE_CONSISTENCY)[number];
}

export const CACHE_DEFAULTS: CacheConfig = { rules: [], maxBytes: 64 * 1024 * 1024, maxEntryBytes: 1024 * 1024, consistency: 'local' };

const NAME = /^[A-Za-z0-9_-]{1,32}$/;
/** A day: longer than that, a write by another road would stay unseen for a day; ETag revalidation covers the rest. */
const MAX_AGE_LIMIT = 86_400;

/** Validates and defaults `cache:`; every problem is pushed by path. */
export function readCache(section: SectionReader): CacheConfig {
  const maxBytes = section.integer('maxBytes', CACHE_DEFAULTS.maxBytes, 0, 64 * 1024 * 1024 * 1024);
  const maxEntryBytes = section.integer('maxEntryBytes', CACHE_DEFAULTS.maxEntryBytes, 1, 1024 * 1024 * 1024);
  if (maxEntryBytes > maxBytes && maxBytes > 0) section.problems.push(`${at(section, 'maxEntryBytes')}: must not exceed cache.maxBytes (${maxBytes}); one entry could not fit`);
  const out: CacheConfig = {
    rules: readRules(section),
    maxBytes,
    maxEntryBytes,
    consistency: section.oneOf('consistency', 'local', CACHE_CONSISTENCY),
  };
  section.finish();
  return out;
}

function at(section: SectionReader, key: string): string {
  return section.path ? `${section.path}.${key}` : key;
}

function readRules(section: SectionReader): CacheRuleConfig[] {
  const raw = section.raw('rules');
  const path = at(section, 'rules');
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    section.problems.push(`${path}: must be a list of rules like [{ when: "path-prefix(/db/orders)", maxAgeSeconds: 30 }]`);
    return [];
  }
  const names = new Set<string>();
  const rules: CacheRuleConfig[] = [];
  raw.forEach((entry: unknown, i) => {
    const r = new SectionReader(entry, `${path}[${i}]`, section.problems);
    const name = r.string('name', `rule${i}`, (v) => (NAME.test(v) ? null : 'must be 1-32 letters, digits, _ or - (it is named in metrics)'));
    if (names.has(name)) section.problems.push(`${path}[${i}].name: ${JSON.stringify(name)} is already the name of another rule; names must be unique`);
    names.add(name);
    const when = r.required('when', conditionProblem);
    if (!r.has('maxAgeSeconds')) section.problems.push(`${path}[${i}].maxAgeSeconds: is required (how long an answer the backend gave no lifetime stays fresh)`);
    const maxAgeSeconds = r.integer('maxAgeSeconds', 0, 1, MAX_AGE_LIMIT);
    r.finish();
    rules.push({ name, when, maxAgeSeconds });
  });
  return rules;
}

function conditionProblem(text: string): string | null {
  try {
    const condition = parseCondition(text);
    if (condition.usesRequestBody) return 'may not read the request body (bson-request-*): a cached read has none';
    if (condition.usesResponse) return 'may not read the response: the rule is decided before there is one';
    return null;
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return `is not a valid condition: ${error.message}`;
    throw error;
  }
}
