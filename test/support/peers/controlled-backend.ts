/**
 * A backend whose behaviour the test sets while it runs (SPEC §13's tests): a latency (fixed, or
 * growing), a mode (answer, 5xx, reset the connection, accept and never answer), and counts of
 * what reached it (requests, in flight now, the most in flight at once). Loopback only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'undici';
import { beforeAll } from 'vitest';
import { startHttpServer, type TestServer } from './http-servers.js';

export type BackendMode = 'answer' | '5xx' | 'reset' | 'hang';

export interface ControlledBackend extends TestServer {
  delayMs: number;
  mode: BackendMode;
  /** Requests that reached it, by path prefix of the first segment (`/a/...` counts under `a`). */
  readonly seen: Map<string, number>;
  readonly inFlight: number;
  /** The most requests in flight at once since the last `resetPeak()`. */
  readonly peak: number;
  resetPeak(): void;
}

export async function startControlledBackend(): Promise<ControlledBackend> {
  let inFlight = 0;
  let peak = 0;
  const seen = new Map<string, number>();
  const state = { delayMs: 0, mode: 'answer' as BackendMode };
  const hung = new Set<ServerResponse>();
  const server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    const segment = (req.url ?? '/').split('/')[1] ?? '';
    seen.set(segment, (seen.get(segment) ?? 0) + 1);
    if (state.mode === 'reset') return void req.socket.destroy();
    if (state.mode === 'hang') {
      hung.add(res);
      res.once('close', () => hung.delete(res));
      return;
    }
    inFlight++;
    if (inFlight > peak) peak = inFlight;
    const mode = state.mode;
    const answer = () => {
      inFlight--;
      if (mode === '5xx') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        return void res.end('backend failure');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url }));
    };
    req.resume();
    if (state.delayMs > 0) setTimeout(answer, state.delayMs);
    else req.once('end', answer);
  });
  // Accessors copied as accessors (Object.assign would copy their values once).
  return Object.defineProperties(
    server,
    Object.getOwnPropertyDescriptors({
      get delayMs() {
        return state.delayMs;
      },
      set delayMs(ms: number) {
        state.delayMs = ms;
      },
      get mode() {
        return state.mode;
      },
      set mode(mode: BackendMode) {
        state.mode = mode;
      },
      seen,
      get inFlight() {
        return inFlight;
      },
      get peak() {
        return peak;
      },
      resetPeak() {
        peak = inFlight;
      },
    }),
  ) as ControlledBackend;
}

/**
 * A controlled backend for one describe block: started (answering in `delayMs`) before its rows
 * and closed after them. Every read goes to the started one, so a stack's config thunk and the rows
 * may use it; reading it while the file is collected throws.
 */
export function useControlledBackend(delayMs = 0): ControlledBackend {
  let started: ControlledBackend | undefined;
  beforeAll(async () => {
    started = await startControlledBackend();
    started.delayMs = delayMs;
    return () => started!.close();
  });
  const live = (): ControlledBackend => {
    if (started === undefined) throw new Error('the controlled backend is read before its beforeAll ran');
    return started;
  };
  return new Proxy({} as ControlledBackend, {
    get: (_, key) => Reflect.get(live(), key),
    set: (_, key, value) => Reflect.set(live(), key, value),
  });
}

export interface LoadResult {
  statuses: Map<number, number>;
  /** Latency of each answer by status (ms). */
  latencies: Map<number, number[]>;
  /** One refusal's body and headers, kept to check its format. */
  refusal: { status: number; headers: Record<string, unknown>; body: string } | null;
}

/**
 * `workers` clients in a closed loop (each sends its next request when the last is answered)
 * for `ms`, or until `stop` settles, whichever comes first. Counts answers by status.
 */
export async function closedLoop(base: string, path: string, o: { workers: number; ms: number; headers?: Record<string, string>; backoffMs?: number; stop?: Promise<unknown> }): Promise<LoadResult> {
  const result: LoadResult = { statuses: new Map(), latencies: new Map(), refusal: null };
  const end = performance.now() + o.ms;
  let stopped = false;
  const stop = () => void (stopped = true);
  o.stop?.then(stop, stop);
  const worker = async () => {
    while (!stopped && performance.now() < end) {
      const started = performance.now();
      const res = await request(`${base}${path}`, { headers: o.headers });
      const body = await res.body.text();
      const took = performance.now() - started;
      result.statuses.set(res.statusCode, (result.statuses.get(res.statusCode) ?? 0) + 1);
      const list = result.latencies.get(res.statusCode) ?? [];
      list.push(took);
      result.latencies.set(res.statusCode, list);
      if (res.statusCode === 503 && result.refusal === null) result.refusal = { status: res.statusCode, headers: res.headers, body };
      // A refused client backs off a little, as one reading Retry-After would (shorter: the test is short).
      if (res.statusCode === 503) await new Promise((resolve) => setTimeout(resolve, o.backoffMs ?? 20));
    }
  };
  await Promise.all(Array.from({ length: o.workers }, worker));
  return result;
}

/** The value of a metric line (`name{labels} value`) in a /_metrics text, or undefined. */
export async function metricValue(base: string, name: string): Promise<number | undefined> {
  const text = await (await request(`${base}/_metrics`)).body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Outrigger's adaptive limit for the backend, from its /_metrics. */
export async function concurrencyLimit(base: string): Promise<number> {
  return (await metricValue(base, 'outrigger_upstream_concurrency_limit')) ?? Number.NaN;
}

/**
 * `workers` closed-loop clients on each of `bases` (replicas in front of one backend) for `ms`,
 * and the wait until every replica's adaptive limit has come down to `atMost`: polled, and bounded
 * by the flood's own length (a busy host lowers the limit late, not never). Answers the floods,
 * still running, and each replica's limit when the wait ended, for the row to judge.
 */
export async function floodUntilLimited(
  bases: string[],
  path: string,
  o: { workers: number; ms: number; headers?: Record<string, string>; atMost: number },
): Promise<{ floods: Array<Promise<LoadResult>>; limits: number[] }> {
  const end = performance.now() + o.ms;
  const floods = bases.map((base) => closedLoop(base, path, o));
  let limits = await Promise.all(bases.map(concurrencyLimit));
  while (limits.some((l) => !(l <= o.atMost)) && performance.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    limits = await Promise.all(bases.map(concurrencyLimit));
  }
  return { floods, limits };
}
