/**
 * Issue 53 item 6: a tool call's inner `POST /graphql/<uri>` is sent to the address the MCP request
 * arrived on. Behind a listener on a pod IP it arrives from that address, and the request chain
 * believed the agent's address only on a loopback peer: every agent's calls counted as the pod IP
 * and shared one `by: client` allowance (and any address condition). The inner request is now
 * recognised by its socket's own end (address and port), whatever the listener.
 *
 * A pod's IP is stood for by 198.18.0.1 on the loopback device of a network namespace of the
 * test's own (`unshare -n`, as root, as on CI): this file runs itself again in there, with
 * OUTRIGGER_TEST_POD_ADDRESS set, and the rows listen on that address, so the inner request
 * arrives from it as in a pod (the kernel picks the destination's own address as the source)
 * while no packet leaves the namespace. The host's own interfaces are never a target. Outside,
 * the same rows run on a listener on 127.0.0.2 (loopback only; Linux gives a connection to any
 * 127.x the source 127.0.0.1, so those rows guard the loopback case and cannot show the pod's).
 * The agents are two loopback addresses (127.0.0.3 and 127.0.0.4, or .5 and .6) as the local
 * ends of their sockets.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { as, useStack } from '../../support/fixtures.js';
import { shopData } from '../../integration/graphql/graphql-helpers.js';
import { shopAppWithTools } from '../../integration/mcp/mcp-helpers.js';

const ALICE = as('alice');

/** Set when this file runs inside its own network namespace, where this address stands for a pod's IP. */
const podAddress = process.env.OUTRIGGER_TEST_POD_ADDRESS;
const POD_ADDRESS = '198.18.0.1';

/** ESTABLISHED IPv4 connections to `host:port`, by their client end (Linux's /proc/net/tcp). */
function clientEndsTo(host: string, port: number): Array<{ address: string; port: number }> {
  const hex = (address: string, p: number) =>
    `${address
      .split('.')
      .map((n) => Number(n).toString(16).padStart(2, '0'))
      .reverse()
      .join('')
      .toUpperCase()}:${p.toString(16).padStart(4, '0').toUpperCase()}`;
  const target = hex(host, port);
  const ends: Array<{ address: string; port: number }> = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, state] = line.trim().split(/\s+/);
    if (!local || remote !== target || state !== '01') continue;
    const [a, p] = local.split(':') as [string, string];
    const bytes = a
      .match(/../g)!
      .map((b) => parseInt(b, 16))
      .reverse();
    ends.push({ address: bytes.join('.'), port: parseInt(p, 16) });
  }
  return ends;
}

function suite(title: string, listenHost: string, agents: [string, string]) {
  describe(title, () => {
    const stack = useStack({
      service: `mcp-address-${listenHost}`,
      backend: { data: shopData() },
      users: { root: ['root'], alice: ['user'] },
      config: {
        listen: { host: listenHost },
        acl: { mode: 'enforce' },
        mcp: { server: 'outrigger' },
        limits: { policies: [{ name: 'per-client', by: 'client', limit: 2, window: '1h', condition: "path-prefix('/graphql/shop')" }] },
      },
      permissions: {
        graphql: { predicate: 'path-prefix(/graphql/shop)', roles: ['user'], priority: 1 },
        orders: { predicate: 'method(GET) and path-prefix(/shop/orders)', roles: ['user'], priority: 1 },
        // An app only one far-away address may use: a request believed to come from it is let in.
        far: { predicate: "path-prefix(/graphql/far) and ip-match('10.9.9.9 allow')", roles: ['user'], priority: 1 },
      },
      apps: { shop: shopAppWithTools(), far: { ...shopAppWithTools(), _id: 'far', descriptor: { uri: 'far' }, mcp: undefined } },
    });
    const dispatchers = agents.map((localAddress) => new Agent({ localAddress }));
    afterAll(async () => {
      for (const d of dispatchers) await d.close();
    });
    const callTool = async (agent: number, id: number) => {
      const res = await request(`${stack.proxy.url}/mcp`, {
        method: 'POST',
        dispatcher: dispatchers[agent],
        headers: { authorization: ALICE, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'order_by_number', arguments: { number: 1 } } }),
      });
      const body = (await res.body.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } };
      return body.result;
    };

    it(`two agents (${agents.join(', ')}) get a by: client allowance each; the third call of one is refused naming the policy`, async () => {
      for (const agent of [0, 1])
        for (let i = 0; i < 2; i++) {
          const result = await callTool(agent, i);
          expect(result.isError, `${agents[agent]} call ${i + 1}: ${result.content[0]!.text}`).toBeFalsy();
        }
      const third = await callTool(0, 3);
      expect(third.isError).toBe(true);
      expect(third.content[0]!.text).toMatch(/^429: rate limit 'per-client'/);
    });

    // The connections' ends are read from Linux's /proc/net/tcp.
    it.skipIf(!existsSync('/proc/net/tcp'))('a client that is not this process cannot claim an address, not even from the port number of an open inner connection', async () => {
      await callTool(1, 9); // an inner connection is open (kept alive) now; its answer does not matter
      const port = Number(new URL(stack.proxy.url).port);
      const ends = clientEndsTo(listenHost, port);
      expect(ends.length).toBeGreaterThan(0);
      for (const end of ends) {
        // From another loopback address, the same port number as a connection of ours (which may be the inner one).
        const status = await new Promise<number>((done, fail) => {
          const req = httpRequest(
            {
              agent: false,
              host: listenHost,
              port,
              method: 'POST',
              path: '/graphql/far',
              localAddress: '127.0.0.7',
              localPort: end.port,
              headers: { authorization: ALICE, 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.9' },
            },
            (res) => {
              res.resume();
              res.on('end', () => done(res.statusCode ?? 0));
            },
          );
          req.on('error', fail);
          req.end(JSON.stringify({ query: '{ orders { number } }' }));
        });
        expect(status, `from 127.0.0.7:${end.port}`).toBe(403);
      }
    });
  });
}

if (podAddress !== undefined) {
  suite('a listener on a pod IP (in a network namespace of its own)', podAddress, ['127.0.0.3', '127.0.0.4']);
} else {
  suite('a listener on 127.0.0.2', '127.0.0.2', ['127.0.0.5', '127.0.0.6']);
  describe('a listener on a pod IP', () => {
    it('the same rows pass in a network namespace where the listener has a non-loopback address', async () => {
      const file = new URL(import.meta.url).pathname;
      const script = `ip link set lo up && ip addr add ${POD_ADDRESS}/32 dev lo && exec npx vitest run ${JSON.stringify(file)}`;
      const child = spawn('unshare', ['-n', 'sh', '-c', script], {
        env: { ...process.env, OUTRIGGER_TEST_POD_ADDRESS: POD_ADDRESS, NO_COLOR: '1', FORCE_COLOR: '0', VITEST: undefined, VITEST_WORKER_ID: undefined, VITEST_POOL_ID: undefined },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((done) => child.on('close', done));
      // Two rows ran in there and passed: a run that skipped or found nothing must not count.
      expect({ code, passed: /Tests\s+(?:\S*\s)?2 passed/.test(output) }, output).toEqual({ code: 0, passed: true });
    }, 120_000);
  });
}
