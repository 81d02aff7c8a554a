/**
 * The fuzz run of issue 11: a seeded generator (fuzz-inputs.ts) sends bad requests to every
 * door of DOORS — bodies, ids, headers, query strings, predicates, templates and GraphQL
 * documents — at the built CLI in a child process, and asserts zero 5xx, zero hangs (every
 * request answers within its deadline) and zero process exits.
 *
 * CI runs OUTRIGGER_FUZZ_PER_DOOR (default 40) inputs per door; the full run is
 * `OUTRIGGER_FUZZ_PER_DOOR=1000 npx vitest run test/adversarial/doors/fuzz.test.ts` (after `npm run
 * build`), with OUTRIGGER_FUZZ_SEED to vary the inputs and OUTRIGGER_FUZZ_REPORT=<file> to keep
 * the counts as JSON.
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOORS, uncovered, type Door } from './doors.js';
import { fuzzRequest, Rng, type FuzzRequest } from './fuzz-inputs.js';
import { closePools, send, startInputSystem, type InputSystem } from './input-system.js';
import { LINGER_BYTES } from '../../../src/http/linger.js';

const PER_DOOR = Number(process.env.OUTRIGGER_FUZZ_PER_DOOR ?? 40);
const SEED = Number(process.env.OUTRIGGER_FUZZ_SEED ?? 11);
/** Run only the doors whose index in DOORS is at least this (to resume a long run). */
const FROM_DOOR = Number(process.env.OUTRIGGER_FUZZ_FROM_DOOR ?? 0);
const CONCURRENCY = 6;
/** A hang is a request with no answer in this long (generous: the CI machine is small and shared). */
const REQUEST_DEADLINE_MS = 30_000;

interface DoorCounts {
  door: string;
  sent: number;
  classes: Record<string, number>;
  /** Each status code seen, with its count. */
  codes: Record<string, number>;
  fiveHundreds: Array<{ status: number; kind: string; method: string; path: string; body: string; answer: string }>;
  hangs: Array<{ kind: string; path: string }>;
  /**
   * An oversized body whose connection closed before the client read an answer. Counted apart,
   * never as a 413 (issue 54: the one seen, on POST /register, was a 400 for a non-canonical
   * path), and allowed only past LINGER_BYTES: a refusal of a body larger than that is answered
   * at once and the connection closed (src/http/linger.ts), so the client's write may fail
   * before it reads the answer. A smaller body is read and thrown away first: a reset there is
   * an error.
   */
  closedPastLinger: Array<{ kind: string; path: string; bytes: number; error: string }>;
  /** Oversized bodies sent. */
  oversized: number;
  otherErrors: Array<{ kind: string; path: string; error: string; request: string }>;
  kinds: Record<string, number>;
  /** Slowest answer, in ms, and what it was. */
  slowest: { ms: number; kind: string };
}

/** `/shop/orders`, `/shop/orders/*` or `/shop/orders/<one plain segment>`, read as the backend reads it (decoded, cut at `;`). */
function writesOneOrder(url: string): boolean {
  const segments = url.split('?')[0]!.split('/').slice(1);
  if (segments[0] !== 'shop' || segments[1] !== 'orders' || segments.length > 3) return false;
  if (segments.length < 3 || segments[2] === '*') return true;
  let id: string;
  try {
    id = decodeURIComponent(segments[2]!);
  } catch {
    return false;
  }
  return id !== '' && id !== '.' && id !== '..' && !/[;/\\]/.test(id);
}

async function runDoor(sys: InputSystem, door: Door, seed: number): Promise<DoorCounts> {
  const rng = new Rng(seed);
  const requests: FuzzRequest[] = Array.from({ length: PER_DOOR }, () => fuzzRequest(rng, door, sys.target.url));
  const counts: DoorCounts = {
    door: `${door.method} ${door.path} (${door.name})`,
    sent: 0,
    classes: {},
    codes: {},
    fiveHundreds: [],
    hangs: [],
    closedPastLinger: [],
    oversized: 0,
    otherErrors: [],
    kinds: {},
    slowest: { ms: 0, kind: '' },
  };
  let next = 0;
  async function worker() {
    while (next < requests.length) {
      const req = requests[next++]!;
      counts.sent++;
      counts.kinds[req.kind] = (counts.kinds[req.kind] ?? 0) + 1;
      if (req.oversized) counts.oversized++;
      const started = performance.now();
      try {
        const answer = await send(sys.url, req.method, req.path, req.headers, req.body, REQUEST_DEADLINE_MS);
        const ms = Math.round(performance.now() - started);
        if (ms > counts.slowest.ms) counts.slowest = { ms, kind: req.kind };
        const cls = `${Math.floor(answer.status / 100)}xx`;
        counts.classes[cls] = (counts.classes[cls] ?? 0) + 1;
        counts.codes[answer.status] = (counts.codes[answer.status] ?? 0) + 1;
        if (answer.status >= 500) {
          const body = req.body === undefined ? '' : String(req.body);
          counts.fiveHundreds.push({ status: answer.status, kind: req.kind, method: req.method, path: req.path.slice(0, 200), body: body.slice(0, 300), answer: answer.text.slice(0, 300) });
        }
      } catch (error) {
        const message = (error as Error).message;
        if (/timeout|aborted/i.test(message) || (error as Error).name === 'TimeoutError') counts.hangs.push({ kind: req.kind, path: req.path.slice(0, 200) });
        const bodyBytes = req.body === undefined ? 0 : Buffer.byteLength(req.body);
        if (bodyBytes > LINGER_BYTES && /closed|reset|EPIPE/i.test(message)) counts.closedPastLinger.push({ kind: req.kind, path: req.path.slice(0, 200), bytes: bodyBytes, error: message });
        else {
          counts.otherErrors.push({ kind: req.kind, path: req.path.slice(0, 200), error: message, request: `${bodyBytes} body bytes, headers ${JSON.stringify(req.headers).slice(0, 300)}` });
        }
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return counts;
}

describe(`fuzz run: ${PER_DOOR} generated bad inputs per door, seed ${SEED}`, () => {
  let sys: InputSystem;
  const results: DoorCounts[] = [];

  beforeAll(async () => {
    sys = await startInputSystem('adv-fuzz');
  }, 60_000);
  afterAll(async () => {
    await closePools();
    await sys?.close();
  });

  it('covers every door the process serves', () => {
    expect(uncovered(sys.routes, sys.adminAreas)).toEqual([]);
  });

  it(
    'answers every input without a 5xx, a hang or an exit',
    async () => {
      for (const [i, door] of DOORS.entries()) if (i >= FROM_DOOR) results.push(await runDoor(sys, door, SEED * 1000 + i));

      const rows = results.map((r) => ({
        door: r.door,
        sent: r.sent,
        ...r.classes,
        '5xx': r.fiveHundreds.length,
        hangs: r.hangs.length,
        oversized: r.oversized,
        closedPastLinger: r.closedPastLinger.length,
        errors: r.otherErrors.length,
        slowestMs: r.slowest.ms,
        slowestKind: r.slowest.kind,
      }));
      console.table(rows);
      const alive = sys.alive() && (await send(sys.url, 'GET', '/_health/live')).status === 200;
      const unexpected = (sys.cli.output().match(/unexpected error while handling a request/g) ?? []).length;
      const report = {
        seed: SEED,
        perDoor: PER_DOOR,
        doors: results.length,
        total: results.reduce((n, r) => n + r.sent, 0),
        alive,
        exits: alive ? 0 : 1,
        unexpectedErrorsLogged: unexpected,
        rows,
        details: results,
      };
      if (process.env.OUTRIGGER_FUZZ_REPORT) writeFileSync(process.env.OUTRIGGER_FUZZ_REPORT, JSON.stringify(report, null, 2));

      // Issue 34: every write a mutation sent acts on the orders collection or one plain document of it.
      expect(sys.backendWrites.filter((url) => !writesOneOrder(url))).toEqual([]);
      expect(results.flatMap((r) => r.fiveHundreds)).toEqual([]);
      expect(results.flatMap((r) => r.hangs)).toEqual([]);
      expect(results.flatMap((r) => r.otherErrors)).toEqual([]);
      // Oversized bodies were sent, and each was answered (a 4xx, with no 5xx above).
      expect(results.reduce((n, r) => n + r.oversized, 0)).toBeGreaterThan(0);
      expect(alive).toBe(true);
      expect(unexpected).toBe(0);
      for (const r of results) expect(r.sent).toBe(PER_DOOR);
    },
    Math.max(120_000, PER_DOOR * DOORS.length * 100),
  );
});
