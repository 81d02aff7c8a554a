/**
 * Writes to a RESTHeart-style backend over HTTP for mutations (SPEC §6.4): exactly the REST
 * request a client of Outrigger would make, `POST {collectionPath}`, `PATCH|DELETE
 * {collectionPath}/{id}` or the bulk `{collectionPath}/*?filter=`, through an undici keep-alive
 * pool. The answer comes back whole (status, headers, body text): the mutation decides what a
 * status means, and the webhooks see the exchange. No answer at all is `BACKEND_UNAVAILABLE`.
 */
import { Pool, type Dispatcher } from 'undici';
import { OutriggerError } from '../../errors.js';
import type { BackendGuard } from '../../proxy/guard/backend-guard.js';
import { guardedCall } from '../../proxy/guard/guarded-call.js';
import type { BackendWrite, BackendWriteResponse, BackendWriter, RequestContext } from '../types.js';
import { encodeQueryComponent } from './http-reader.js';

export interface HttpBackendWriterOptions {
  /** Backend origin with an optional path prefix, as the reader's. */
  readonly baseUrl: string;
  /** Where a collection lives (default `/{db}/{collection}`). */
  readonly collectionPath?: string;
  /** Headers for the backend per request (default `ctx.backendHeaders`: the caller's identity). */
  readonly headersFor?: (ctx: RequestContext) => Record<string, string>;
  /** Connections of the writer's own pool (default 16). */
  readonly connections?: number;
  /** Largest response body kept (default 1 MiB); RESTHeart's write answers are small. */
  readonly maxResponseBytes?: number;
  /** The response cache's drop of what a write touched (SPEC §12), awaited before the mutation's answer: the status, or null when none came. */
  readonly dropCached?: (db: string, collection: string, status: number | null) => Promise<void>;
  /** The backend origin's guard (SPEC §13), as the reader's. */
  readonly guard?: BackendGuard;
}

export interface HttpBackendWriter extends BackendWriter {
  close(): Promise<void>;
}

/** The collection path of `db`/`collection` under a `collectionPath` template. */
export function collectionPathOf(template: string, db: string, collection: string): string {
  return template.replaceAll('{db}', encodeURIComponent(db)).replaceAll('{collection}', encodeURIComponent(collection));
}

export function createHttpBackendWriter(opts: HttpBackendWriterOptions): HttpBackendWriter {
  const base = new URL(opts.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`graphql backend url must be http(s), got ${opts.baseUrl}`);
  const origin = base.origin;
  const prefix = base.pathname.replace(/\/+$/, '');
  const template = opts.collectionPath ?? '/{db}/{collection}';
  const maxBytes = opts.maxResponseBytes ?? 1024 * 1024;
  const pool = new Pool(origin, { connections: opts.connections ?? 16 });
  const headersFor = opts.headersFor ?? ((ctx: RequestContext) => ({ ...(ctx.backendHeaders ?? {}) }));

  const target = (write: BackendWrite): { path: string; query: string } => {
    const collection = collectionPathOf(template, write.db, write.collection);
    const path = write.id === undefined ? collection : `${collection}/${write.id === '*' ? '*' : encodeURIComponent(write.id)}`;
    const params: string[] = [];
    if (write.filter && Object.keys(write.filter).length > 0) params.push(`filter=${encodeQueryComponent(JSON.stringify(write.filter))}`);
    if (write.idType) params.push(`id_type=${write.idType}`);
    return { path, query: params.join('&') };
  };

  return {
    target,
    async send(write, ctx): Promise<BackendWriteResponse> {
      const { path, query } = target(write);
      const headers: Record<string, string> = { accept: 'application/json', ...headersFor(ctx) };
      const body = write.body === undefined ? undefined : JSON.stringify(write.body);
      if (body !== undefined) headers['content-type'] = 'application/json';
      // SPEC §9: each write carries the request's trace, in a client span of its own when recorded (no query: filters are data).
      const span = ctx.trace?.child(`${write.method} ${write.db}/${write.collection}`, 'client', () => ({
        'http.request.method': write.method,
        'server.address': base.hostname,
        'url.full': origin + prefix + path,
      }));
      if (span) headers.traceparent = span.traceparent;
      let response: Dispatcher.ResponseData;
      try {
        const send = () => pool.request({ origin, path: `${prefix}${path}${query ? `?${query}` : ''}`, method: write.method, headers, body, signal: ctx.signal });
        response = opts.guard ? await guardedCall(opts.guard, send, { signal: ctx.signal, priority: ctx.priority }) : await send();
        span?.end(response.statusCode);
      } catch (error) {
        span?.fail((error as { code?: string }).code ?? 'error');
        span?.end();
        await opts.dropCached?.(write.db, write.collection, null);
        if (ctx.signal?.aborted || error instanceof OutriggerError) throw error;
        throw new OutriggerError(502, 'BACKEND_UNAVAILABLE', `the backend could not be reached to write ${write.db}/${write.collection}; nothing was written by this field`);
      }
      const out: Record<string, string> = {};
      for (const [name, value] of Object.entries(response.headers)) {
        if (typeof value === 'string') out[name] = value;
        else if (Array.isArray(value)) out[name] = value.join(', ');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of response.body) {
          size += (chunk as Buffer).length;
          if (size <= maxBytes) chunks.push(chunk as Buffer);
        }
      } catch (error) {
        await opts.dropCached?.(write.db, write.collection, null);
        if (ctx.signal?.aborted) throw error;
        throw new OutriggerError(502, 'BACKEND_UNAVAILABLE', `the backend connection failed while answering a write of ${write.db}/${write.collection}; the write may have happened`);
      }
      await opts.dropCached?.(write.db, write.collection, response.statusCode);
      return { status: response.statusCode, headers: out, body: Buffer.concat(chunks).toString('utf8') };
    },
    async close() {
      await pool.close();
    },
  };
}
