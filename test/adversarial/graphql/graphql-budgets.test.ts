/**
 * Issue 25 items 2, 3 and 7: GraphQL queries that fetch little and produce a lot. Each row is an
 * attack an ordinary user can send within the read and document budgets; each must be refused
 * before any backend read (or cut off by the response cap), and while the worst of them run, no
 * request may hold Outrigger's event loop much longer than an answer within the budgets does, and
 * a separate process polling /_health every 20 ms must keep being answered.
 *
 * The data: 100 groups and 100 items, every item joined to every group (same `kind`), so
 * `groups(limit: 100) { items(limit: 100) { ... } }` really yields 10,000 items.
 */
import { spawn } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { beforeEach, describe, expect, it } from 'vitest';
import { call } from '../../support/clients/http-client.js';
import { basic } from '../../support/outrigger.js';
import { useStack } from '../../support/fixtures.js';
import { watchLoopStalls } from '../../support/loop-stalls.js';

const ALICE = basic('alice', 'alice-password');
const BLOB = 'x'.repeat(60_000);
/**
 * While the worst shapes run, no request may hold the loop (between two turns, in ms of CPU) for
 * more than three times what the within-budget answer (40,000 values) holds it (the median of five),
 * plus this: room for one garbage-collection pause. Issue 40, on the loaded 2-core machine: that
 * answer 55-100 ms (one 140), the refused shapes 2-60 ms, and with the output estimate turned off
 * the 50-alias shape 450-660 ms.
 */
const LOOP_MARGIN_CPU_MS = 100;

const data = {
  adv: {
    groups: Array.from({ length: 100 }, (_, i) => ({ _id: `g${i + 1}`, n: i + 1, kind: 'k' })),
    blobs: Array.from({ length: 100 }, (_, i) => ({ _id: `b${i + 1}`, n: i + 1, blob: BLOB })),
    items: Array.from({ length: 100 }, (_, i) => ({ _id: `i${i + 1}`, n: i + 1, s: `item-${i + 1}`, kind: 'k' })),
  },
};

const SCHEMA = `
  input Page { limit: Int = 1000 }
  enum Color { RED GREEN }
  type Item { n: Int, s: String, kind: String }
  type Group { n: Int, kind: String, items(skip: Int = 0, limit: Int = 100): [Item] }
  type Blob { n: Int, blob: String }
  type Query {
    groups(limit: Int = 100, color: Color): [Group]
    groupsPaged(page: Page): [Group]
    items(skip: Int = 0, limit: Int = 10): [Item]
    blobs(limit: Int = 100): [Blob]
  }
`;
const MAPPINGS = {
  Query: {
    groups: { db: 'adv', collection: 'groups', sort: { n: 1 }, limit: { $arg: 'limit' } },
    groupsPaged: { db: 'adv', collection: 'groups', sort: { n: 1 }, limit: { $arg: 'page.limit' } },
    items: { db: 'adv', collection: 'items', sort: { n: 1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } },
    blobs: { db: 'adv', collection: 'blobs', sort: { n: 1 }, limit: { $arg: 'limit' } },
  },
  Group: { items: { db: 'adv', collection: 'items', find: { kind: { $fk: 'kind' } }, sort: { n: 1 }, skip: { $arg: 'skip' }, limit: { $arg: 'limit' } } },
};

const aliases = (n: number, field = 'n', prefix = 'a') => Array.from({ length: n }, (_, i) => `${prefix}${i}: ${field}`).join(' ');

/** Polls `${url}/_health` every `everyMs` from another process; answers each round trip's latency (ms). */
function healthPoller(url: string, everyMs: number) {
  const script = `
    const url = process.argv[1]; const every = Number(process.argv[2]); const out = [];
    let stop = false; process.stdin.on('data', () => { stop = true; }); process.stdin.resume();
    (async () => {
      while (!stop) {
        const t = performance.now();
        try { const r = await fetch(url, { signal: AbortSignal.timeout(30000) }); await r.arrayBuffer(); out.push(performance.now() - t); }
        catch { out.push(-1); }
        const wait = every - (performance.now() - t); if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      process.stdout.write(JSON.stringify(out)); process.exit(0);
    })();`;
  const child = spawn(process.execPath, ['-e', script, `${url}/_health`, String(everyMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let text = '';
  child.stdout.on('data', (c) => (text += c));
  const done = new Promise<number[]>((resolve) => child.on('exit', () => resolve(text ? (JSON.parse(text) as number[]) : [])));
  return {
    async stop(): Promise<number[]> {
      child.stdin.write('stop');
      return done;
    },
  };
}

describe('GraphQL output budgets (issue 25)', () => {
  const stack = useStack(
    {
      service: 'gql-budgets',
      backend: { data },
      users: { root: ['root'], alice: ['user'] },
      config: { upstream: { identity: { mode: 'headers' } }, acl: { mode: 'enforce' } },
      permissions: {
        'users-graphql': { predicate: 'path-prefix(/graphql)', roles: ['user'], priority: 1 },
        'users-read-adv': { predicate: 'method(GET) and path-prefix(/adv)', roles: ['user'], priority: 1 },
      },
      apps: {
        budget: { _id: 'budget', descriptor: { uri: 'budget' }, schema: SCHEMA, mappings: MAPPINGS },
        closed: { _id: 'closed', descriptor: { uri: 'closed', introspection: false }, schema: SCHEMA, mappings: MAPPINGS },
      },
    },
    60_000,
  );

  beforeEach(() => stack.backend.clearRequests());
  const reads = () => stack.backend.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/adv/')).length;
  const query = (q: string, variables?: Record<string, unknown>, uri = 'budget') =>
    call(stack.proxy.url, `/graphql/${uri}`, { method: 'POST', auth: ALICE, headers: { accept: 'application/graphql-response+json' }, body: { query: q, ...(variables ? { variables } : {}) } });
  const codeOf = (res: { json: any }) => res.json?.errors?.[0]?.extensions?.code as string | undefined;

  it('a normal join still answers (the budgets leave ordinary queries alone)', async () => {
    const res = await query('{ groups(limit: 100) { n items(limit: 3) { n s } } }');
    expect(res.status).toBe(200);
    expect(res.json.data.groups).toHaveLength(100);
    expect(res.json.data.groups[99].items).toEqual([
      { n: 1, s: 'item-1' },
      { n: 2, s: 'item-2' },
      { n: 3, s: 'item-3' },
    ]);
  });

  it('1,000 scalar aliases under a 100 × 100 join: refused before any read', async () => {
    const res = await query(`{ groups(limit: 100) { items(limit: 100) { ${aliases(1000)} } } }`);
    expect(res.status).toBe(400);
    expect(['TOO_MANY_ALIASES', 'QUERY_TOO_COSTLY']).toContain(codeOf(res));
    expect(reads()).toBe(0);
  }, 60_000);

  it('10,000 scalar aliases under a 100 × 100 join: refused by the alias cap, before any read', async () => {
    const res = await query(`{ groups(limit: 100) { items(limit: 100) { ${aliases(10_000)} } } }`);
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('TOO_MANY_ALIASES');
    expect(res.json.errors[0].message).toMatch(/aliases/);
    expect(reads()).toBe(0);
  }, 60_000);

  it('aliases within the cap whose output is over the budget: QUERY_TOO_COSTLY before any read, with the estimate', async () => {
    const res = await query(`{ groups(limit: 100) { items(limit: 100) { ${aliases(50)} } } }`);
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('QUERY_TOO_COSTLY');
    expect(res.json.errors[0].extensions.cost.output).toBeGreaterThanOrEqual(500_000);
    expect(res.json.errors[0].extensions.maxCost.output).toBe(50_000);
    expect(reads()).toBe(0);
  });

  it('aliases spread through fragments count where they are spread', async () => {
    const res = await query(`fragment F on Item { ${aliases(40)} } { groups(limit: 100) { items(limit: 100) { ...F ...F ...F } } }`);
    expect(res.status).toBe(400);
    expect(['TOO_MANY_ALIASES', 'QUERY_TOO_COSTLY']).toContain(codeOf(res));
    expect(reads()).toBe(0);
  });

  it('a variable default counts as the literal would (item 3)', async () => {
    const literal = await query('{ groups(limit: 1000) { items(limit: 1000) { n } } }');
    expect(literal.status).toBe(400);
    expect(codeOf(literal)).toBe('QUERY_TOO_COSTLY');
    const viaDefault = await query('query($l: Int = 1000) { groups(limit: $l) { items(limit: $l) { n } } }');
    expect(viaDefault.status).toBe(400);
    expect(codeOf(viaDefault)).toBe('QUERY_TOO_COSTLY');
    expect(viaDefault.json.errors[0].extensions.cost).toEqual(literal.json.errors[0].extensions.cost);
    expect(reads()).toBe(0);
  });

  it('an input-field default inside a variable default counts too (item 3)', async () => {
    const res = await query('query($p: Page = {}) { groupsPaged(page: $p) { items(limit: 200) { n } } }');
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('QUERY_TOO_COSTLY');
    expect(reads()).toBe(0);
  });

  it('skip counts: a join reads skip + limit documents per parent (item 7)', async () => {
    const res = await query('{ groups(limit: 100) { items(skip: 100000, limit: 1) { n } } }');
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('QUERY_TOO_COSTLY');
    expect(reads()).toBe(0);
  });

  it('a response over the byte cap is cut off while serializing: RESPONSE_TOO_LARGE, and the process stays up', async () => {
    // 100 documents × 10 aliases of a 60 KB string: 60 MB of output from 6 MB read, within every estimate.
    const res = await query(`{ blobs(limit: 100) { ${aliases(10, 'blob')} } }`);
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('RESPONSE_TOO_LARGE');
    expect(res.text.length).toBeLessThan(10_000);
  }, 60_000);

  it('variable-coercion errors are BAD_USER_INPUT (item 7)', async () => {
    const res = await query('query($l: Int) { groups(limit: $l) { n } }', { l: 'many' });
    expect(res.status).toBe(400);
    expect(codeOf(res)).toBe('BAD_USER_INPUT');
    expect(reads()).toBe(0);
  });

  it('no "Did you mean" when introspection is off, in validation and in variables (item 7)', async () => {
    const open = await query('{ group { n } }');
    expect(open.json.errors[0].message).toMatch(/Did you mean/);
    const closed = await query('{ group { n } }', undefined, 'closed');
    expect(closed.status).toBe(400);
    expect(closed.json.errors[0].message).not.toMatch(/Did you mean/);
    const enumVar = await query('query($c: Color) { groups(color: $c) { n } }', { c: 'REDD' }, 'closed');
    expect(enumVar.status).toBe(400);
    expect(JSON.stringify(enumVar.json)).not.toMatch(/Did you mean/);
  });

  it('GraphQL JSON answers carry X-Content-Type-Options: nosniff (item 7)', async () => {
    const ok = await query('{ items(limit: 1) { n } }');
    expect(ok.headers['x-content-type-options']).toBe('nosniff');
    const bad = await query('{ nope }');
    expect(bad.headers['x-content-type-options']).toBe('nosniff');
  });

  it('big distinct queries do not grow the heap past the parsed-query cache budget (item 7)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 60; i++) {
      // ~90 KiB of short tokens: the parsed form is far larger than the text.
      const res = await query(`{ items(limit: 1) { n } q${i}: items(limit: 1) { ${'n '.repeat(40_000)} } }`);
      expect(res.status).toBeLessThan(500);
    }
    gc();
    const grownMb = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
    console.log(`heap grown by ${grownMb.toFixed(0)} MB after 60 big queries`);
    expect(grownMb).toBeLessThan(120);
  }, 120_000);

  it('keeps the event loop turning (and /_health answering, polled from another process) while the worst shapes run', async () => {
    // Each round's texts are new (a different alias prefix), so no round is answered from the
    // parsed-query cache: what an attacker varying the text would cost.
    const shapes = (p: string) => [
      `{ groups(limit: 100) { items(limit: 100) { ${aliases(10_000, 'n', p)} } } }`,
      `{ groups(limit: 100) { items(limit: 100) { ${aliases(1000, 'n', p)} } } }`,
      `{ groups(limit: 100) { items(limit: 100) { ${aliases(50, 'n', p)} } } }`,
      `{ blobs(limit: 100) { ${aliases(10, 'blob', p)} } }`,
      `query($l: Int = 1000) { groups(limit: $l) { items(limit: $l) { ${p}: n } } }`,
      // Within every budget: 40,000 values, answered.
      `{ groups(limit: 100) { items(limit: 100) { ${aliases(4, 'n', p)} } } }`,
    ];
    const WITHIN = 5;
    // Warm-up (the first of each shape also compiles code), not measured.
    await Promise.all(shapes('w').map((q) => query(q)));

    // The texts (up to 10,000 aliases each) are built before the clock starts: Outrigger runs in
    // this test's process, so building them while measuring would block its loop on our account.
    const baselineTexts = ['x', 'y', 'z', 'u', 'v'].map((p) => shapes(p)[WITHIN]!);
    const rounds = ['b', 'c', 'd'].map(shapes);
    const poller = healthPoller(stack.proxy.url, 20);
    await new Promise((r) => setTimeout(r, 500));

    // What one request may hold the loop for is measured where it happens, in the loop of this
    // process, which runs Outrigger: the longest stretch between two turns, counted in the CPU
    // time spent in it (test/support/loop-stalls.ts). A busy machine stretches the wall time of
    // every stall and of the poller's round trips (issue 40: 309 ms once against a 250 ms bound
    // on those), and the CPU time of a piece of work less so; the baseline, taken a moment before
    // on the same machine, is the largest piece of work a request within every budget does (the
    // 40,000-value answer), so how slow the machine is cancels out. One request at a time: a
    // turn that reads several requests runs all their work, which would measure the batching.
    const baseline: number[] = [];
    for (const text of baselineTexts) {
      const watch = watchLoopStalls();
      expect((await query(text)).status).toBe(200);
      baseline.push(watch.stop().maxCpuMs);
    }
    const started = performance.now();
    const statuses: number[] = [];
    const stalls: number[] = [];
    for (const texts of rounds) {
      for (const text of texts) {
        const watch = watchLoopStalls();
        statuses.push((await query(text)).status);
        stalls.push(watch.stop().maxCpuMs);
      }
    }
    const elapsed = performance.now() - started;
    await new Promise((r) => setTimeout(r, 200));
    const latencies = await poller.stop();
    const sorted = [...latencies].sort((a, b) => a - b);
    const max = sorted[sorted.length - 1] ?? Infinity;
    const p95 = sorted[Math.floor(sorted.length * 0.95)] ?? Infinity;
    const ms = (list: number[]) => list.map((v) => v.toFixed(0)).join(' ');
    const typical = [...baseline].sort((a, b) => a - b)[Math.floor(baseline.length / 2)]!;
    const bound = 3 * typical + LOOP_MARGIN_CPU_MS;
    const worst = Math.max(...stalls);
    console.log(`worst shapes: ${statuses.join(',')} in ${elapsed.toFixed(0)} ms; /_health polls ${latencies.length}, max ${max.toFixed(0)} ms, p95 ${p95.toFixed(0)} ms (wall, another process)`);
    console.log(`longest loop stall, ms of CPU: within-budget baseline ${ms(baseline)}; worst shapes ${ms(stalls)}; bound ${bound.toFixed(0)}`);
    // Before issue 25 these shapes held the loop for seconds (and the 10,000-alias one took the
    // process down); with the output estimate off, the 50-alias shape alone holds it ~600 ms.
    expect(worst, `a request held the loop for ${worst.toFixed(0)} ms of CPU; the within-budget answer for ${typical.toFixed(0)} (median)`).toBeLessThan(bound);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 200, 400, 400, 400, 400, 400, 200, 400, 400, 400, 400, 400, 200]);
    // /_health was answered throughout (its latency, seen from another process, is the machine's).
    expect(latencies.length).toBeGreaterThan(5);
    expect(latencies.every((l) => l >= 0)).toBe(true);
  }, 180_000);
});
