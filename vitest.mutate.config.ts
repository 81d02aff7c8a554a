import { defineConfig } from 'vitest/config';

// The tests `npm run mutate` (stryker.config.mjs) runs against each mutant: the unit tests of the
// mutated modules and the integration and adversarial files that drive them through real Redis
// and HTTP, and no others (a mutant re-runs only the tests that covered it, but the dry run and
// every file's beforeAll cost time on a shared 2-core machine).
// Left out: test/adversarial/password-guessing (minutes of scrypt per run) and
// test/adversarial/rate-limits (a row runs the built CLI, which no mutant reaches); `npm test`
// runs both. MUTATE_GROUPS=a,b narrows the list to some module groups (scripts/mutate.mjs).
const groups: Record<string, string[]> = {
  access: ['test/unit/access/**/*.test.ts', 'test/unit/graphql/serving/read-rules.test.ts', 'test/integration/access/access.test.ts', 'test/adversarial/access/bearer-flood.test.ts'],
  limits: ['test/unit/limits/**/*.test.ts', 'test/integration/limits/rate-limits.test.ts', 'test/integration/limits/rate-limits-keys.test.ts'],
  keys: ['test/unit/keys/**/*.test.ts', 'test/integration/access/api-keys.test.ts', 'test/integration/access/api-keys-cache.test.ts'],
  // The guard's own rows connect real sockets at send time; webhooks-security (the same checks
  // through a whole webhook) adds minutes per mutant on a shared 2-core machine.
  ssrf: ['test/unit/webhooks/ssrf-guard.test.ts', 'test/unit/webhooks/webhook-document.test.ts', 'test/unit/net/ssrf-*.test.ts'],
  // The bus on its own (a replica's caches on top of it are the keys and access groups' tests).
  bus: ['test/unit/store/change-bus*.test.ts'],
};
const chosen = (process.env.MUTATE_GROUPS ?? Object.keys(groups).join(',')).split(',').filter(Boolean);
// MUTATE_UNIT=1: only the unit rows (test/unit), for a quick measure of a module on a busy machine.
const unitOnly = process.env.MUTATE_UNIT === '1';
const include = [...new Set(chosen.flatMap((name) => groups[name] ?? []))].filter((pattern) => !unitOnly || pattern.startsWith('test/unit/'));

export default defineConfig({
  test: {
    include,
    // Instrumented code on a loaded machine: an Outrigger pair starts slower than under `npm test`.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    retry: 0,
  },
});
