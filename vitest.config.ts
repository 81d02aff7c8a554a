import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: integration files each start redis-server and HTTP servers of their own.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
