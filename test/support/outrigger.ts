import { startOutrigger, type RunningOutrigger } from '../../src/app.js';
import { validateConfig } from '../../src/config/validate.js';
import type { OutriggerConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/observability/logger.js';

export type RawConfig = Record<string, any>;

/** Deep-merges plain objects (arrays and scalars replace), for test configs built from a base. */
export function merge(base: RawConfig, over: RawConfig): RawConfig {
  const out: RawConfig = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && base[k] && typeof base[k] === 'object' ? merge(base[k], v) : v;
  }
  return out;
}

export function testConfig(raw: RawConfig): OutriggerConfig {
  const { config, problems } = validateConfig(merge({ listen: { host: '127.0.0.1', port: 0 }, shutdown: { drainSeconds: 0, timeoutSeconds: 2 }, log: { level: 'silent' } }, raw));
  if (problems.length) throw new Error(`test config invalid:\n${problems.join('\n')}`);
  return config;
}

export interface TestStartOptions {
  worker?: boolean;
  /** The document stores' version poll; far away (`BUS_ONLY_POLL_MS`) leaves the change bus alone to carry a change. */
  documentPollMs?: number;
}

/** A document poll no test waits for: a replica started with it learns of a change through the bus or not in time. */
export const BUS_ONLY_POLL_MS = 10 * 60_000;

/** Outrigger in this process (fast to start; the CLI e2e tests cover the built binary). */
export async function startTestOutrigger(raw: RawConfig, options: TestStartOptions = {}): Promise<RunningOutrigger & { url: string }> {
  const config = testConfig(raw);
  const running = await startOutrigger(config, {
    worker: options.worker ?? false,
    documentPollMs: options.documentPollMs,
    logger: createLogger({ level: process.env.OUTRIGGER_TEST_LOG ?? 'silent' }),
  });
  return running as RunningOutrigger & { url: string };
}

export function basic(id: string, password: string): string {
  return `Basic ${Buffer.from(`${id}:${password}`).toString('base64')}`;
}

const hashes = new Map<string, Promise<string>>();

/**
 * A `users` config section of static users, each with the password `<id>-password`. Hashes are
 * made once per test process (scrypt is deliberately slow).
 */
export async function staticUsers(users: Record<string, string[]>): Promise<RawConfig> {
  const { hashPassword } = await import('../../src/access/password-hash.js');
  const entries = await Promise.all(
    Object.entries(users).map(async ([id, roles]) => {
      if (!hashes.has(id)) hashes.set(id, hashPassword(`${id}-password`));
      return { id, password: await hashes.get(id)!, roles };
    }),
  );
  return { source: 'static', static: entries };
}
