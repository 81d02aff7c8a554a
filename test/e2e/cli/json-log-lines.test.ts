/**
 * SPEC §15 "every log line JSON (a dependency's stack trace included)", issue 48: the built CLI
 * is sent what made a dependency print a multi-line stack trace (an oversized WebSocket frame to
 * a GraphQL subscription endpoint), a Node process warning, and an error nothing else catches;
 * every line it writes on stdout and stderr must parse as JSON, and one names each problem.
 */
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { requireBuiltCli, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { call } from '../../support/clients/http-client.js';
import { basic, staticUsers } from '../../support/outrigger.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { until, waitFor } from '../../support/wait.js';
import { putSubscriptionPermissions, subscriptionApp } from '../../integration/subscriptions/graphql-subscriptions-helpers.js';

const ROOT = basic('root', 'root-password');

/** Every line of the process's stdout and stderr, parsed: a line that is not JSON fails the test, naming it. */
function jsonLines(output: string): Array<Record<string, any>> {
  return output
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, any>;
      } catch {
        throw new Error(`a log line is not JSON: ${line}`);
      }
    });
}

/**
 * Loaded before the CLI (NODE_OPTIONS=--import): on SIGWINCH it does what a dependency might,
 * a process warning, console.error of an Error, console.warn of text, then an exception nothing catches.
 */
const DEPENDENCY = `
process.on('SIGWINCH', () => {
  process.emitWarning('a dependency warns', { code: 'OUTRIGGER_TEST_WARNING' });
  console.error(new Error('a dependency printed this error'));
  console.warn('a dependency says %s', 'beware', { n: 42 });
  setTimeout(() => { throw new Error('nothing caught this'); }, 50);
});
`;

describe('every log line is JSON (built CLI)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let cli: RunningCli;

  beforeAll(async () => {
    requireBuiltCli('the log lines of the started process are read');
    redis = await startTestRedis();
    backend = await startStandinBackend({ data: { shop: { orders: [] } } });
    const config = writeTempFile('outrigger.yaml', {
      service: { id: 'json-log-lines' },
      listen: { host: '127.0.0.1', port: 0 },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'] }),
      acl: { mode: 'enforce' },
      shutdown: { drainSeconds: 0, timeoutSeconds: 2 },
      log: { level: 'info' },
    });
    const preload = writeTempFile('dependency.mjs', DEPENDENCY);
    cli = await startCli(config, ['--no-worker'], 60_000, { NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` });
    await putSubscriptionPermissions(cli.url, ROOT);
    await call(cli.url, '/_admin/acl/anonymous-graphql', { method: 'PUT', auth: ROOT, body: { predicate: 'path-prefix(/graphql/subs)', roles: ['$unauthenticated'], priority: 1 } });
    expect((await call(cli.url, '/gql-apps/subs', { method: 'PUT', auth: ROOT, body: subscriptionApp() })).status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    if (cli && cli.child.exitCode === null) cli.child.kill('SIGTERM');
    await cli?.exited;
    await backend?.close();
    await redis?.close();
  });

  it('an oversized WebSocket frame to a GraphQL subscription endpoint: closed 1009, logged as one JSON line', async () => {
    const ws = new WebSocket(`${cli.url.replace(/^http/, 'ws')}/graphql/subs`, 'graphql-transport-ws');
    let closed: number | undefined;
    ws.on('close', (code) => (closed = code));
    ws.on('error', () => {});
    await until(() => ws.readyState === WebSocket.OPEN, 'the socket opened');
    ws.send(JSON.stringify({ type: 'connection_init', payload: { pad: 'x'.repeat(2 * 1024 * 1024) } }));
    await until(() => closed !== undefined, 'the socket closed');
    expect(closed).toBe(1009);
    const line = (await waitFor(
      () => jsonLines(cli.output()).find((l) => l.event === 'websocket-refused' && l.reason === 'frame'),
      (l) => l !== undefined,
      15_000,
      'the refused frame logged',
    ))!;
    expect(line).toMatchObject({ level: 40, code: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' });
    expect(line.msg).toMatch(/a WebSocket was closed: the client sent a frame ws refused \(Max payload size exceeded\)/);
    jsonLines(cli.output());
  }, 30_000);

  it("a dependency's warning, console output and an exception nothing caught: one JSON line each, the stack in a field, then exit 1", async () => {
    cli.child.kill('SIGWINCH');
    expect(await cli.exited).toBe(1);
    const logged = jsonLines(cli.output());
    const warning = logged.find((l) => l.warning?.code === 'OUTRIGGER_TEST_WARNING');
    expect(warning).toMatchObject({ level: 40, msg: 'Node.js warning: Warning: a dependency warns' });
    expect(warning!.warning.stack).toMatch(/\n\s+at /);
    const printed = logged.find((l) => l.source === 'console.error');
    expect(printed).toMatchObject({ level: 50, msg: 'a dependency printed this error', err: { type: 'Error', message: 'a dependency printed this error' } });
    expect(printed!.err.stack).toMatch(/\n\s+at /);
    expect(logged.find((l) => l.source === 'console.warn')).toMatchObject({ level: 40, msg: 'a dependency says beware { n: 42 }' });
    const fatal = logged.find((l) => l.level === 60);
    expect(fatal).toMatchObject({ origin: 'uncaughtException', msg: 'an exception nothing caught, exiting: nothing caught this', err: { message: 'nothing caught this' } });
    expect(fatal!.err.stack).toMatch(/\n\s+at /);
  }, 30_000);
});
