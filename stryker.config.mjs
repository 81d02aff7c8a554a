// Mutation testing of the modules whose failure is a security or data-loss bug (issue 54,
// docs/testing.md "Mutation testing"). Run by `npm run mutate` (scripts/mutate.mjs), not by CI:
// each mutant re-runs the tests that covered it, which takes tens of minutes on two cores.
const groups = {
  access: ['src/access/**/*.ts'],
  limits: ['src/limits/**/*.ts'],
  keys: ['src/keys/**/*.ts'],
  ssrf: ['src/net/ssrf-guard/**/*.ts'],
  bus: ['src/store/change-bus.ts'],
};
const chosen = (process.env.MUTATE_GROUPS ?? Object.keys(groups).join(',')).split(',').filter(Boolean);
// MUTATE_FILES=a.ts,b.ts narrows a run to some files of its groups (their results join the
// group's incremental file, so a later run of the whole group reuses them).
const files = process.env.MUTATE_FILES?.split(',').filter(Boolean);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: files ?? chosen.flatMap((name) => groups[name] ?? []),
  // Each mutant runs only the tests that executed it. Code that runs only while a test file sets
  // up (a beforeAll starting Outrigger) is "static": re-running every test for each such mutant
  // would take hours, so those are ignored and counted apart (docs/testing.md).
  coverageAnalysis: 'perTest',
  // The wording of messages and log lines is not what these modules guard (their status codes,
  // headers and Redis keys are checked by the rows that read them): string mutants would add
  // about a fifth to the run for text.
  mutator: { excludedMutations: ['StringLiteral'] },
  ignoreStatic: true,
  // Two cores shared with other work: at most two sandboxes at once (MUTATE_CONCURRENCY to change).
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
  // The integration rows wait on real Redis and HTTP; a loaded machine stretches them.
  timeoutMS: 15_000,
  timeoutFactor: 2,
  dryRunTimeoutMinutes: 15,
  // Not into the sandbox: built output (no test here runs it) and other tools' work folders.
  ignorePatterns: ['dist', 'bench/.work', 'coverage', '.outrigger', 'reports'],
  // A second run retests only the mutants whose code or covering tests changed (`-- --force`
  // for all of them); the file is per module group, under reports/ (not in git).
  incremental: true,
  incrementalFile: `reports/mutation/${chosen.join('-')}.incremental.json`,
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${chosen.join('-')}.html` },
  jsonReporter: { fileName: `reports/mutation/${chosen.join('-')}.json` },
  thresholds: { high: 90, low: 75, break: null },
};
