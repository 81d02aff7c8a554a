/**
 * This process's cache numbers by rule, for the console's hit ratio per rule (`GET <admin>/cache`,
 * SPEC §12): lookups by result, stores, evictions. The metrics count the same across replicas
 * (`outrigger_cache_lookups_total{rule,result}`); these are one process's, since it started.
 */

export type LookupResult = 'hit' | 'miss' | 'revalidated' | 'bypass';

interface RuleCounts extends Record<LookupResult, number> {
  stores: number;
  evictions: number;
}

/** One rule's numbers in this process. */
export interface RuleStats {
  readonly rule: string;
  readonly hits: number;
  readonly misses: number;
  readonly revalidated: number;
  readonly bypassed: number;
  /** hits / (hits + misses + revalidated): of the lookups that could have hit; null before the first. */
  readonly hitRatio: number | null;
  readonly stores: number;
  readonly evictions: number;
  readonly bytes: number;
}

const zero = (): RuleCounts => ({ hit: 0, miss: 0, revalidated: 0, bypass: 0, stores: 0, evictions: 0 });

export class RuleCounters {
  /** Rule names are the config's and `graphql:<uri>` of the apps: bounded by what operators write. */
  private readonly byRule = new Map<string, RuleCounts>();

  private of(rule: string): RuleCounts {
    let counts = this.byRule.get(rule);
    if (counts === undefined) this.byRule.set(rule, (counts = zero()));
    return counts;
  }

  count(rule: string, result: LookupResult): void {
    this.of(rule)[result]++;
  }

  stored(rule: string): void {
    this.of(rule).stores++;
  }

  evicted(rule: string): void {
    this.of(rule).evictions++;
  }

  /** `rules` first (in their order, counted or not), then every other rule counted. */
  list(rules: readonly string[], bytesOf: (rule: string) => number): RuleStats[] {
    return [...new Set([...rules, ...this.byRule.keys()])].map((rule) => {
      const c = this.byRule.get(rule) ?? zero();
      const asked = c.hit + c.miss + c.revalidated;
      return {
        rule,
        hits: c.hit,
        misses: c.miss,
        revalidated: c.revalidated,
        bypassed: c.bypass,
        hitRatio: asked === 0 ? null : c.hit / asked,
        stores: c.stores,
        evictions: c.evictions,
        bytes: bytesOf(rule),
      };
    });
  }
}
