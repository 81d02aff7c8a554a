/** Shared by the reload tests (SPEC §15; src/reload.ts): a config file to rewrite, and the reload lines a built CLI logged. */
import type { RunningCli } from '../../support/clients/cli.js';
import type { TestServer } from '../../support/peers/http-servers.js';
import type { TestRedis } from '../../support/redis/redis.js';
import { waitFor } from '../../support/wait.js';

export interface Version {
  limit: number;
  window?: string;
  origins: string[];
  port?: number;
  /** Lines added at the end of the file, to make it invalid. */
  extra?: string;
}

/** The reload lines the process logged so far (one JSON object per line). */
export function reloadLines(proxy: RunningCli): Array<{ level: number; msg: string; [field: string]: unknown }> {
  return proxy
    .output()
    .split('\n')
    .filter((line) => line.includes('config reload'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

/** A config of the test's service, Redis and backend: one `by: service` policy on /api, and CORS. */
export function configText(service: string, redis: TestRedis, upstream: TestServer, v: Version): string {
  return [
    `service: { id: ${service}, publicUrl: "http://127.0.0.1:8080" }`,
    `listen: { host: 127.0.0.1, port: ${v.port ?? 0} }`,
    'shutdown: { drainSeconds: 0, timeoutSeconds: 5 }',
    `upstream: { url: ${upstream.url} }`,
    `redis: { url: ${redis.url} }`,
    'acl: { mode: own-routes }',
    'log: { level: info }',
    'limits:',
    '  policies:',
    `    - { name: ceiling, by: service, limit: ${v.limit}, window: ${v.window ?? '1d'}, condition: "path-prefix('/api')" }`,
    `cors: { allowOrigins: [${v.origins.join(', ')}] }`,
    v.extra ?? '',
  ].join('\n');
}

/** Waits until the process has logged `count` reload lines in all. */
export function reloaded(proxy: RunningCli, count: number) {
  return waitFor(
    () => reloadLines(proxy),
    (lines) => lines.length >= count,
    30_000,
    `${count} config reload log lines`,
  );
}
