import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores, three files at a time: the integration files mostly wait on their own
    // redis-servers, HTTP servers and browsers (the suite keeps the cores about half busy with
    // two), so a third cuts the run from about 300 s to about 205 s; a fourth gains 10 s more
    // and loads the machine enough to stretch the timing-sensitive tests.
    maxWorkers: 3,
    // CI (CI=true) gives a failed test one more try: the suite starts real redis-servers, clusters,
    // browsers and child processes on two cores, and a timeout there should not hide a whole
    // submission. A test that fails twice still fails the run, and vitest lists every retried test.
    retry: process.env.CI ? 1 : 0,
    reporters: ['default'],
  },
});
