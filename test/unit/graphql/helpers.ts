/**
 * Shared set-up for the GraphQL engine tests: the RESTHeart stand-in backend (real HTTP, mingo),
 * the real HTTP backend reader, and a compiled app; reads are counted at the backend.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleGraphqlHttp } from '../../../src/graphql/serve/http-handler.js';
import { startStandinBackend, type ReceivedRequest, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { createHttpBackendReader, type HttpBackendReader } from '../../../src/graphql/backend/http-reader.js';
import { compileApp, type CompiledApp, type CompileOptions } from '../../../src/graphql/compile/compile-app.js';
import { executeGraphql } from '../../../src/graphql/serve/execute.js';
import { validateAppDocument } from '../../../src/graphql/document/validate-app.js';
import type { RequestContext } from '../../../src/graphql/types.js';

export type Data = Record<string, Record<string, Array<Record<string, unknown>>>>;

export interface Engine {
  backend: StandinBackend;
  reader: HttpBackendReader;
  app: CompiledApp;
  /** Executes a query; clears the backend's request log first. */
  run(query: string, variables?: Record<string, unknown>, ctx?: RequestContext): Promise<{ status: number; body: any; backendReads?: number }>;
  /** Collection reads the backend received since the last run. */
  reads(): ReceivedRequest[];
  /** The decoded filter of each read. */
  filters(): unknown[];
  close(): Promise<void>;
}

export async function startEngine(data: Data, appDoc: Record<string, unknown>, opts: Partial<CompileOptions> = {}): Promise<Engine> {
  const backend = await startStandinBackend({ data });
  const reader = createHttpBackendReader({ baseUrl: backend.url, headersFor: (ctx) => ({ ...(ctx.backendHeaders ?? {}) }) });
  const checked = validateAppDocument(appDoc, { defaultDb: 'restheart', maxLimit: opts.maxLimit ?? 1000 });
  if (!checked.ok) throw new Error(`test app invalid: ${checked.problems.join('; ')}`);
  // Engine tests look at reads and batching; the cost limit has its own tests (cost.test.ts).
  const app = compileApp(checked.app, { reader, maxCost: { reads: 1e9, documents: 1e9, output: 1e9 }, ...opts });
  const reads = () => backend.requests.filter((r) => r.method === 'GET');
  return {
    backend,
    reader,
    app,
    async run(query, variables, ctx = {}) {
      backend.clearRequests();
      const out = await executeGraphql(app, { query, variables: variables ?? null }, ctx);
      return { status: out.status, body: JSON.parse(JSON.stringify(out.body)), backendReads: out.backendReads };
    },
    reads,
    filters: () => reads().map((r) => (r.query.get('filter') === null ? undefined : JSON.parse(r.query.get('filter') as string))),
    async close() {
      await reader.close();
      await backend.close();
    },
  };
}

export const oid = (n: number) => ({ $oid: n.toString(16).padStart(24, '0') });

/** A real node:http server answering every request with handleGraphqlHttp for one app. */
export async function serveApp(app: CompiledApp, ctxFor: (req: IncomingMessage) => RequestContext = () => ({})): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      handleGraphqlHttp({ method: req.method ?? 'GET', headers: req.headers, query: url.searchParams, body }, app, ctxFor(req)).then(
        (out) => res.writeHead(out.status, out.headers).end(out.body),
        (error: unknown) => res.writeHead(500).end(String(error)),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql/app`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
