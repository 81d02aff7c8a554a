/**
 * The set-up the integration and adversarial files share, written once: a redis-server of the
 * file's own, an upstream (the RESTHeart stand-in or a plain HTTP server), a webhook target, an
 * SMTP capture, Outrigger on top of them, and the permissions and GraphQL apps written as root.
 *
 * `useStack(options)` registers a beforeAll that starts what the options ask for and an afterAll
 * that stops all of it (and every extra Outrigger started with `stack.start`) in reverse order.
 * A file states only what differs: its service id, data, users, the config beyond the defaults.
 * The parts are read in tests (`stack.proxy.url`); one that was not asked for (or read before the
 * beforeAll ran) throws, naming it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect } from 'vitest';
import { startStandinBackend, type StandinBackend, type StandinOptions } from '../../examples/standin-backend/index.js';
import { startOutrigger } from '../../src/app.js';
import { createLogger } from '../../src/observability/logger.js';
import { call } from './clients/http-client.js';
import { startHttpServer, type TestServer } from './peers/http-servers.js';
import { basic, merge, startTestOutrigger, staticUsers, testConfig, type RawConfig, type TestStartOptions } from './outrigger.js';
import { startTestRedis, type TestRedis } from './redis/redis.js';
import { startSmtpCapture, type SmtpCapture } from './peers/smtp.js';
import { startTarget, type Target } from './peers/webhook-target.js';

export type Running = Awaited<ReturnType<typeof startTestOutrigger>>;

/** The Basic header of a static user made by `users` (password `<id>-password`). */
export const as = (id: string): string => basic(id, `${id}-password`);
export const ROOT = as('root');

/** The secret Outrigger signs identity JWTs with and the stand-in verifies them with (`jwtIdentity`). */
export const JWT_SECRET = 'a-test-secret-that-is-at-least-32-characters-long';

/** The permission that lets role `hook-editor` manage webhooks. */
export const HOOK_EDITORS = { predicate: 'path-prefix(/_admin/webhooks)', roles: ['hook-editor'], priority: 1 };

export interface StackOptions {
  /** service.id */
  service?: string;
  /** The RESTHeart stand-in as the upstream, with these options (data, jwt, users). */
  backend?: StandinOptions;
  /** Outrigger passes the caller on as a JWT signed with JWT_SECRET, which the stand-in verifies. */
  jwtIdentity?: boolean;
  /** A plain HTTP server as the upstream instead of the stand-in. */
  upstream?: (req: IncomingMessage, res: ServerResponse) => void;
  /** A webhook target: `true` answers 200, a function scripts the answers. */
  target?: true | Target['answer'];
  /** An SMTP capture (its options). */
  smtp?: true | Parameters<typeof startSmtpCapture>[0];
  /** Static users and their roles; each signs in with `<id>-password` (`as(id)`). */
  users?: Record<string, string[]>;
  /** Merged over service.id, upstream.url, redis.url and users (objects merge, the rest replaces). */
  config?: RawConfig | ((stack: Stack) => RawConfig);
  /** Starts Outrigger on `stack.raw` (the default; `{ worker: true }` with a webhook worker). `false`: the file starts its own. */
  outrigger?: boolean | { worker?: boolean };
  /** The stack's Outrigger logs at this level into `stack.logLines` / `stack.logText` (with its config's log.secretHeaders). */
  captureLogs?: string;
  /** Permissions written as root once Outrigger runs (`PUT /_admin/acl/<id>`), each answered 201. */
  permissions?: Record<string, Record<string, unknown>>;
  /** GraphQL apps written as root after the permissions (`PUT /gql-apps/<id>`), each answered 201. */
  apps?: Record<string, Record<string, unknown>>;
}

export interface Stack {
  readonly redis: TestRedis;
  readonly backend: StandinBackend;
  /** The upstream's URL, whichever kind it is. */
  readonly upstreamUrl: string;
  readonly target: Target;
  readonly smtp: SmtpCapture;
  /** The Outrigger `useStack` started. */
  readonly proxy: Running;
  /** The stack's Outrigger's log lines, parsed, and as written (with `captureLogs`). */
  readonly logLines: Array<Record<string, any>>;
  readonly logText: string;
  /** The config it was started with (a test may start more from it). */
  readonly raw: RawConfig;
  /** Starts another Outrigger (on `stack.raw` merged with `over`), stopped with the stack. */
  start(over?: RawConfig, options?: TestStartOptions): Promise<Running>;
  /** Writes a document as root (`PUT <path>`) and expects 201. */
  put(path: string, doc: unknown, base?: string): Promise<void>;
  /** Runs `stop` when the stack stops (before what was started earlier). */
  onStop(stop: () => Promise<unknown> | unknown): void;
}

class StackParts implements Stack {
  parts: Partial<Record<'redis' | 'backend' | 'upstream' | 'target' | 'smtp' | 'proxy' | 'raw', unknown>> = {};
  private stops: Array<() => Promise<unknown> | unknown> = [];
  logLines: Array<Record<string, any>> = [];
  logText = '';

  private part<T>(name: keyof StackParts['parts']): T {
    const value = this.parts[name];
    if (value === undefined) throw new Error(`this test's stack has no ${name}: ask useStack for it`);
    return value as T;
  }
  get redis() {
    return this.part<TestRedis>('redis');
  }
  get backend() {
    return this.part<StandinBackend>('backend');
  }
  get upstreamUrl() {
    return this.parts.backend ? this.backend.url : this.part<TestServer>('upstream').url;
  }
  get target() {
    return this.part<Target>('target');
  }
  get smtp() {
    return this.part<SmtpCapture>('smtp');
  }
  get proxy() {
    return this.part<Running>('proxy');
  }
  get raw() {
    return this.part<RawConfig>('raw');
  }

  onStop(stop: () => Promise<unknown> | unknown): void {
    this.stops.push(stop);
  }

  async start(over: RawConfig = {}, options: TestStartOptions = {}): Promise<Running> {
    const running = await startTestOutrigger(merge(this.raw, over), options);
    this.onStop(() => running.stop());
    return running;
  }

  async put(path: string, doc: unknown, base = this.proxy.url): Promise<void> {
    const res = await call(base, path, { method: 'PUT', auth: ROOT, body: doc });
    expect(res.status, `PUT ${path}: ${res.text.slice(0, 500)}`).toBe(201);
  }

  async stop(): Promise<void> {
    for (const stop of this.stops.splice(0).reverse()) await stop();
  }
}

/** Starts what `options` asks for; `stop()` ends it all. For files that set up inside a test. */
export async function startStack(options: StackOptions): Promise<Stack & { stop(): Promise<void> }> {
  const stack = new StackParts();
  await fill(stack, options);
  return stack;
}

/** `startStack` in a beforeAll and its `stop` in an afterAll of the current describe (or file). */
export function useStack(options: StackOptions, timeoutMs?: number): Stack {
  const stack = new StackParts();
  beforeAll(() => fill(stack, options), timeoutMs);
  afterAll(() => stack.stop());
  return stack;
}

async function fill(stack: StackParts, options: StackOptions): Promise<void> {
  try {
    const redis = await startTestRedis();
    stack.parts.redis = redis;
    stack.onStop(() => redis.close());
    if (options.backend) {
      const backend = await startStandinBackend(options.jwtIdentity ? { jwt: { secret: JWT_SECRET }, ...options.backend } : options.backend);
      stack.parts.backend = backend;
      stack.onStop(() => backend.close());
    } else if (options.upstream) {
      const upstream = await startHttpServer(options.upstream);
      stack.parts.upstream = upstream;
      stack.onStop(() => upstream.close());
    }
    if (options.target) {
      const target = await startTarget(options.target === true ? undefined : options.target);
      stack.parts.target = target;
      stack.onStop(() => target.close());
    }
    if (options.smtp) {
      const smtp = await startSmtpCapture(options.smtp === true ? {} : options.smtp);
      stack.parts.smtp = smtp;
      stack.onStop(() => smtp.close());
    }
    const base: RawConfig = {
      ...(options.service ? { service: { id: options.service } } : {}),
      ...(stack.parts.backend || stack.parts.upstream ? { upstream: { url: stack.upstreamUrl, ...(options.jwtIdentity ? { identity: { mode: 'jwt', jwt: { secret: JWT_SECRET } } } : {}) } } : {}),
      redis: { url: redis.url },
      ...(options.users ? { users: await staticUsers(options.users) } : {}),
    };
    const over = typeof options.config === 'function' ? options.config(stack) : (options.config ?? {});
    stack.parts.raw = merge(base, over);
    if (options.outrigger !== false) {
      const worker = typeof options.outrigger === 'object' ? options.outrigger.worker : undefined;
      stack.parts.proxy = options.captureLogs ? await startLogged(stack, options.captureLogs, worker ?? false) : await stack.start({}, { worker });
      for (const [id, doc] of Object.entries(options.permissions ?? {})) await stack.put(`/_admin/acl/${id}`, doc);
      for (const [id, doc] of Object.entries(options.apps ?? {})) await stack.put(`/gql-apps/${id}`, doc);
    }
  } catch (error) {
    await stack.stop();
    throw error;
  }
}

/** The stack's Outrigger with a logger writing into `stack.logLines` and `stack.logText`. */
async function startLogged(stack: StackParts, level: string, worker: boolean): Promise<Running> {
  const config = testConfig(stack.raw);
  const destination = new Writable({
    write(chunk, _encoding, done) {
      const text = String(chunk);
      stack.logText += text;
      for (const line of text.split('\n').filter(Boolean)) stack.logLines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  const running = (await startOutrigger(config, { worker, logger: createLogger({ level, secretHeaders: config.log.secretHeaders, destination }) })) as Running;
  stack.onStop(() => running.stop());
  return running;
}
