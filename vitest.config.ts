import { configDefaults, defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/longest-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Stryker's sandboxes (npm run mutate) hold a copy of the tests.
    exclude: [...configDefaults.exclude, '.stryker-tmp/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // One module graph per worker, not one per file: importing the app (undici, ioredis, graphql,
    // the MCP SDK...) took 1,172 s of the workers' 2,501 s of tests in a whole run (4.4 s a file at
    // load 15); with the graph kept it took 77 s, and the run went from 1,331 s to 994 s with the
    // same results. Every file starts its own servers, Redis and clients and stops them in
    // afterAll, so nothing a file needs is left by another; a test that changes process-wide
    // state (fake timers, process.env) restores it in the file.
    isolate: false,
    // Longest files first (test/durations.json): see test/support/longest-first.ts.
    sequence: { sequencer: LongestFirst },
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
