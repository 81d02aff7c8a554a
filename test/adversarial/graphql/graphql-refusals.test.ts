/**
 * SPEC §15's GraphQL-shaped refusals under what a hostile or merely odd client sends: Accept
 * headers that are malformed, huge, repeated, upper-case or admit nothing (the refusal is never
 * turned into a 406 or a stream, and its body always parses), bytes in the path that must come
 * back escaped, an endless chunked body (413 at once, GraphQL-shaped, the rest not buffered), and
 * a streaming client (graphql-sse) that gets a refusal instead of its stream.
 */
import { createClient, NetworkError } from 'graphql-sse';
import { describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { call, type CallResult } from '../../support/clients/http-client.js';
import { shopApp, shopData } from '../../integration/graphql/graphql-helpers.js';
import { rawClient, readUntilClosed } from '../support.js';

const GQL = 'application/graphql-response+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

function expectGraphqlError(res: CallResult, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.json.errors).toHaveLength(1);
  expect(Object.keys(res.json)).toEqual(['errors']);
  expect(res.json.errors[0].extensions.code).toBe(code);
  expect(typeof res.json.errors[0].message).toBe('string');
}

describe('GraphQL-shaped refusals under odd and hostile requests (SPEC §15)', () => {
  const stack = useStack({
    service: 'gql-refusals-adv',
    backend: { data: shopData() },
    users: { root: ['root'], alice: ['user'], eve: ['guest'] },
    config: { acl: { mode: 'enforce' }, features: { webhooks: 'disabled' } },
    permissions: { 'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 } },
    apps: { shop: shopApp() },
  });
  const refused = (accept: string) => call(stack.proxy.url, '/graphql/shop', { method: 'POST', auth: as('eve'), headers: { accept }, body: { query: '{ orders { number } }' } });

  it('malformed, clamped, upper-case and huge Accept values pick a type and never fail the refusal', async () => {
    const junk = Array.from({ length: 400 }, (_, i) => `x${i}/y${i};q=0.${i % 10}`).join(', ');
    const rows: Array<[string, string]> = [
      ['application/graphql-response+json;q=abc, application/json', JSON_TYPE], // an unreadable q is 0
      ['application/graphql-response+json;q=2, application/json;q=0.9', GQL], // q over 1 is 1
      ['application/graphql-response+json;q=-1', JSON_TYPE],
      ['APPLICATION/GRAPHQL-RESPONSE+JSON', GQL],
      [';;;,,,;q=', JSON_TYPE],
      [`${junk}, */*;q=0.1`, GQL],
      [junk, JSON_TYPE],
      ['image/png', JSON_TYPE], // admits neither: answered anyway, never 406
      ['text/event-stream', JSON_TYPE], // a stream client is refused before any stream
    ];
    for (const [accept, type] of rows) {
      const res = await refused(accept);
      expectGraphqlError(res, 403, 'FORBIDDEN');
      expect(res.headers['content-type'], accept.slice(0, 80)).toBe(type);
    }
  });

  it('repeated Accept header lines are read as one list', async () => {
    const body = JSON.stringify({ query: '{ orders { number } }' });
    const head = (accepts: string[]) =>
      `POST /graphql/shop HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n${accepts.map((a) => `accept: ${a}\r\n`).join('')}content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    for (const [accepts, type] of [
      [['application/json', 'application/graphql-response+json;q=0.1'], JSON_TYPE],
      [['text/html', 'application/graphql-response+json'], GQL],
    ] as Array<[string[], string]>) {
      const { text } = await readUntilClosed(await rawClient(stack.proxy.url, head(accepts), body), 5000);
      expect(text).toMatch(/^HTTP\/1\.1 401 /);
      expect(text.toLowerCase()).toContain(`content-type: ${type}\r\n`);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it('the head stage refusing a request on the route (two Authorization headers) is GraphQL-shaped', async () => {
    const head = `GET /graphql/shop?query=%7B__typename%7D HTTP/1.1\r\nhost: x\r\nconnection: close\r\naccept: */*\r\nauthorization: ${as('alice')}\r\nauthorization: ${as('eve')}\r\n\r\n`;
    const { text } = await readUntilClosed(await rawClient(stack.proxy.url, head), 5000);
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text.toLowerCase()).toContain(`content-type: ${GQL}\r\n`);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({
      errors: [{ message: expect.stringMatching(/more than one Authorization header/), extensions: { code: 'BAD_REQUEST' } }],
    });
  });

  it('what the path carries comes back JSON-escaped in the message', async () => {
    for (const [path, shown] of [
      ['/graphql/%3Cscript%3Ealert(1)', '/graphql/<script>alert(1)'],
      ['/graphql/a%22b', '/graphql/a"b'],
      ['/graphql/%E2%80%A8x', '/graphql/%E2%80%A8x'],
      ['/graphql/%F0%9F%92%A5', '/graphql/%F0%9F%92%A5'],
    ]) {
      const res = await call(stack.proxy.url, path!, { method: 'POST', headers: { accept: 'application/graphql-response+json' }, body: { query: '{ x }' } });
      expectGraphqlError(res, 404, 'APP_NOT_FOUND');
      expect(res.json.errors[0].message).toContain(`no GraphQL app is served at ${shown}`);
    }
    // A path without a canonical form names no route: the head stage's 400 is Outrigger's body.
    const slash = await call(stack.proxy.url, '/graphql/a%2Fb', { method: 'POST', headers: { accept: 'application/graphql-response+json' }, body: { query: '{ x }' } });
    expect(slash.status).toBe(400);
    expect(slash.json).toMatchObject({ 'http status code': 400, message: expect.stringMatching(/encoded "\/"/) });
  });

  it('an endless chunked body is refused 413 PAYLOAD_TOO_LARGE, GraphQL-shaped, without reading it all', async () => {
    const socket = await rawClient(
      stack.proxy.url,
      `POST /graphql/shop HTTP/1.1\r\nhost: x\r\nauthorization: ${as('alice')}\r\naccept: */*\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
    );
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const answer = readUntilClosed(socket, 15_000);
    // Writes on until the server answers and closes (or 4 MiB): the refusal does not wait for the end.
    socket.on('error', () => {});
    for (let i = 0; i < 64 && !socket.destroyed; i++) {
      const ok = socket.write(`${chunk.length.toString(16)}\r\n`) && socket.write(chunk) && socket.write('\r\n');
      sent += chunk.length;
      if (!ok) await new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('drain', resolve).once('close', resolve)));
    }
    socket.end();
    const { text } = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text.toLowerCase()).toContain(`content-type: ${GQL}\r\n`);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({ errors: [{ message: expect.stringMatching(/larger than 1048576 bytes/), extensions: { code: 'PAYLOAD_TOO_LARGE' } }] });
    expect(sent).toBeGreaterThan(1024 * 1024);
  });

  it('a graphql-sse client refused before its stream gets the GraphQL errors in the response it rejects with', async () => {
    const client = createClient({ url: `${stack.proxy.url}/graphql/shop`, headers: { authorization: as('eve') }, retryAttempts: 0 });
    const error = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: 'subscription { orderChanged { op } }' }, { next: () => resolve(new Error('streamed')), error: resolve, complete: () => resolve(new Error('completed')) });
    });
    expect(error).toBeInstanceOf(NetworkError);
    const response = (error as NetworkError<Response>).response!;
    expect(response.status).toBe(403);
    // It asks for text/event-stream only, which admits neither JSON type: application/json.
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    expect(await response.json()).toEqual({ errors: [{ message: expect.stringMatching(/no permission allows/), extensions: { code: 'FORBIDDEN' } }] });
    client.dispose(); // after the body is read: disposing aborts the fetch
  });
});
