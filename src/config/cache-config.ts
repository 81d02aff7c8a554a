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
import { z } from 'zod';
import { ALWAYS, got, integer, oneOf, optionalSection, required, section, text } from './fields.js';

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

const rule = section({
  /** Default: `rule<index>` (rulesOf). */
  name: text((v) => (NAME.test(v) ? null : 'must be 1-32 letters, digits, _ or - (it is named in metrics)')).optional(),
  when: required(conditionProblem),
  maxAgeSeconds: z
    .int({
      error: (iss) => (iss.input === undefined ? 'is required (how long an answer the backend gave no lifetime stays fresh)' : `must be an integer from 1 to ${MAX_AGE_LIMIT} ${got(iss.input)}`),
    })
    .min(1)
    .max(MAX_AGE_LIMIT),
});

const nameAt = (given: unknown, i: number) => (typeof given === 'string' ? given : `rule${i}`);

const rules = z
  .array(rule, { error: 'must be a list of rules like [{ when: "path-prefix(/db/orders)", maxAgeSeconds: 30 }]' })
  .superRefine((list, ctx) => {
    if (!Array.isArray(list)) return;
    const names = new Set<string>();
    list.forEach((r, i) => {
      const name = nameAt((r as { name?: unknown } | undefined)?.name, i);
      if (names.has(name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `${JSON.stringify(name)} is already the name of another rule; names must be unique`, input: name });
      names.add(name);
    });
  }, ALWAYS)
  .transform((list): CacheRuleConfig[] => list.map((r, i) => ({ name: nameAt(r.name, i), when: r.when, maxAgeSeconds: r.maxAgeSeconds })));

/** `cache:` (SPEC §12): every problem named by its path. */
export const cacheSchema = optionalSection({
  rules: rules.default([]),
  maxBytes: integer(0, 64 * 1024 * 1024 * 1024).default(CACHE_DEFAULTS.maxBytes),
  maxEntryBytes: integer(1, 1024 * 1024 * 1024).default(CACHE_DEFAULTS.maxEntryBytes),
  consistency: oneOf(CACHE_CONSISTENCY).default('local'),
}).superRefine((c, ctx) => {
  if (typeof c.maxEntryBytes === 'number' && typeof c.maxBytes === 'number' && c.maxEntryBytes > c.maxBytes && c.maxBytes > 0)
    ctx.addIssue({ code: 'custom', path: ['maxEntryBytes'], message: `must not exceed cache.maxBytes (${c.maxBytes}); one entry could not fit`, input: c.maxEntryBytes });
}, ALWAYS);

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
