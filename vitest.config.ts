import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Stryker's sandboxes (npm run mutate) hold a copy of the tests.
    exclude: [...configDefaults.exclude, '.stryker-tmp/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores, three files at a time: the integration files mostly wait on their own
    // redis-servers, HTTP servers and browsers (the suite keeps the cores about half busy with
    // two), so a third cuts the run from about 300 s to about 205 s; a fourth gains 10 s more
    // and loads the machine enough to stretch the timing-sensitive tests.
    maxWorkers: 3,
    // No retries, on CI or off it: a test that passes on its second try is a flake, and a flake is
    // a finding to fix (a wait on a condition instead of a fixed sleep, a test that sets up its own
    // state), not one to absorb.
    retry: 0,
    reporters: ['default'],
  },
});
