/**
 * The README's way from `npm run demo` to an MCP client listing the demo's tools (SPEC §11): the
 * built demo runs, alice takes a key with the curl the README shows, and the official SDK client
 * with that key lists the shop app's tools and calls one.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../src/util/free-port.js';
import { basic } from '../../support/outrigger.js';
import { call } from '../../support/clients/http-client.js';

const DEMO = resolve(import.meta.dirname, '../../../dist/examples/demo/main.js');
const README = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');

describe("npm run demo (built): an MCP client lists and calls the demo app's tools", () => {
  it("a key from POST /keys, then the SDK client on /mcp: a reader key lists recent_orders only (place_order writes, which reader may not), and it answers alice's orders; alice herself lists both", async () => {
    expect(README).toContain("new StreamableHTTPClientTransport(new URL('http://localhost:8080/mcp')");
    const port = await freePort();
    const env = { ...process.env, OUTRIGGER_LOG_LEVEL: 'warn', OUTRIGGER_DEMO_PORT: String(port), OUTRIGGER_DEMO_BACKEND_PORT: String(await freePort()) };
    const child = spawn(process.execPath, [DEMO], { cwd: mkdtempSync(join(tmpdir(), 'outrigger-demo-mcp-')), env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((done) => child.on('exit', done));
    try {
      let stdout = '';
      await new Promise<void>((ready, fail) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('Ctrl-C stops the demo')) ready();
        });
        void exited.then((code) => fail(new Error(`the demo exited (${code}) before it ran:\n${stdout}`)));
      });
      const base = `http://localhost:${port}`;
      expect(stdout).toContain(`${base}/mcp`);
      const issued = await call(base, '/keys', { method: 'POST', auth: basic('alice', 'alice-password'), body: { name: 'agent', roles: ['reader'] } });
      expect(issued.status).toBe(201);
      const client = new Client({ name: 'demo-agent', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${issued.json.key as string}` } } }));
      try {
        const { tools } = await client.listTools();
        // Issue 53: reader may not POST /restheart/orders, so place_order (whose every call was FORBIDDEN) is not offered, nor callable.
        expect(tools.map((t) => t.name).sort()).toEqual(['recent_orders']);
        await expect(client.callTool({ name: 'place_order', arguments: { items: [{ productId: 'p-espresso', qty: 1 }], total: 1 } })).rejects.toThrow(/no tool named "place_order"/);
        const result = await client.callTool({ name: 'recent_orders', arguments: { limit: 2 } });
        expect(result.isError).toBeFalsy();
        const orders = (result.structuredContent as { orders: Array<{ user: { name: string } }> }).orders;
        expect(orders.length).toBeGreaterThan(0);
        expect(new Set(orders.map((o) => o.user.name)).size).toBe(1); // alice's own orders only (readFilter)
      } finally {
        await client.close();
      }
      // Alice herself (role user) may place orders: she is offered both.
      const alice = new Client({ name: 'demo-agent', version: '1.0.0' });
      await alice.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: basic('alice', 'alice-password') } } }));
      try {
        expect((await alice.listTools()).tools.map((t) => t.name).sort()).toEqual(['place_order', 'recent_orders']);
      } finally {
        await alice.close();
      }
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 90_000);
});
