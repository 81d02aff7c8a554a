/**
 * GraphQL over Server-Sent Events (SPEC §6.5), distinct-connections mode of the `graphql-sse`
 * protocol, with the `graphql-sse` library's handler: it parses the request (`POST` JSON or `GET`
 * query parameters), frames `next` and `complete` events and sends its first comment. What it does
 * not do is added around it here: the heartbeat comment every `subscriptions.heartbeatSeconds` (the
 * library's own fixed 12 s ping is dropped), each `next` carries `id:` (the change's
 * feed position, taken in order from the subscription as it hands results out), a `Last-Event-ID`
 * resumes, the response's unsent bytes are bounded (past 1 MiB the subscriber is ended with an
 * error event naming why), and a shutdown ends the stream with `retry:`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHandler, type Request as SseRequest } from 'graphql-sse';
import type { OpenRequest, SubscriptionService } from './service.js';
import type { SubscriptionStream } from './subscription.js';

/** Unsent bytes of one stream before its subscriber counts as not reading (SPEC §6.5: 1 MiB). */
export const MAX_UNSENT_BYTES = 1024 * 1024;

/** What the route knows of the request (everything but the GraphQL parameters, which the library parses). */
export type SseOpen = Omit<OpenRequest, 'params' | 'transport' | 'onYield' | 'shutdown' | 'resumeAfter'>;

interface SseContext {
  readonly open: SseOpen;
  readonly res: ServerResponse;
  readonly ids: Array<string | null>;
  shutdownHint: number | null;
  stream?: SubscriptionStream;
}

/** The library's ping and first comment (an empty SSE comment). */
const COMMENT = ':\n\n';

export function createSseTransport(service: SubscriptionService, heartbeatMs = 15_000) {
  const handler = createHandler<IncomingMessage, SseContext>({
    authenticate: () => undefined,
    onSubscribe: async (req, params) => {
      const x = req.context;
      const lastEventId = req.headers.get('last-event-id');
      const opened = await service.open({
        ...x.open,
        params,
        transport: 'sse',
        ...(lastEventId !== null && lastEventId !== undefined ? { resumeAfter: lastEventId } : {}),
        onYield: (position) => x.ids.push(position),
        unsent: () => x.res.writableLength,
        // A reconnect hint, not `complete`: the client is to come back (elsewhere) and resume.
        shutdown: (retryAfterMs) => {
          x.shutdownHint = retryAfterMs;
          if (!x.res.writableEnded) x.res.end(`retry: ${retryAfterMs}\n: this server is shutting down; reconnect\n\n`);
        },
      });
      if (!opened.ok) {
        const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
        if (opened.retryAfterSeconds !== undefined) headers['retry-after'] = String(opened.retryAfterSeconds);
        return [JSON.stringify({ errors: opened.errors }), { status: opened.status, statusText: '', headers }];
      }
      x.stream = opened.stream;
      return opened.stream;
    },
  });

  /** Serves one SSE subscription request to its end. `body` is the POST body already read. */
  return async function serveSse(req: IncomingMessage, res: ServerResponse, body: Buffer | undefined, open: SseOpen): Promise<void> {
    const context: SseContext = { open, res, ids: [], shutdownHint: null };
    const request: SseRequest<IncomingMessage, SseContext> = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: {
        // The protocol's handler compares Accept exactly; the route already decided it is an event stream.
        get: (name: string) => (name.toLowerCase() === 'accept' ? 'text/event-stream' : headerValue(req, name)),
      },
      body: body ? body.toString('utf8') : null,
      raw: req,
      context,
    };
    const [out, init] = await handler(request);
    if (typeof out === 'string' || out === null) {
      res.writeHead(init.status, { ...(init.headers ?? {}) });
      res.end(out ?? undefined);
      return;
    }
    res.writeHead(init.status, { ...(init.headers ?? {}), 'x-accel-buffering': 'no' });
    res.flushHeaders();
    const onClose = () => void out.return(undefined);
    res.once('close', onClose);
    // Gone while the subscription was being registered: its 'close' came before anyone listened.
    if (req.socket.destroyed) onClose();
    const heartbeat = setInterval(() => {
      if (!res.destroyed && !res.writableEnded) res.write(COMMENT);
    }, heartbeatMs);
    heartbeat.unref();
    let first = true;
    try {
      for await (const chunk of out) {
        if (res.destroyed || res.writableEnded) break;
        if (chunk === COMMENT) {
          // The first comment goes out at once (some browsers wait for a first byte); the library's 12 s pings do not.
          if (first) res.write(chunk);
          first = false;
          continue;
        }
        if (chunk.startsWith('event: next')) {
          const id = context.ids.shift();
          res.write(id ? `id: ${id}\n${chunk}` : chunk);
        } else res.write(chunk);
        if (res.writableLength > MAX_UNSENT_BYTES) {
          context.stream?.end({ message: `this subscriber did not read: more than ${MAX_UNSENT_BYTES / 1024 / 1024} MiB were waiting to be sent; reconnect and read faster`, code: 'SLOW_SUBSCRIBER' });
        }
      }
    } finally {
      clearInterval(heartbeat);
      res.off('close', onClose);
      if (!res.destroyed && !res.writableEnded) res.end();
      // A client that does not read never lets the end through: give it a moment, then cut.
      if (!res.writableFinished) setTimeout(() => res.destroy(), 2000).unref();
    }
  };
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name.toLowerCase()];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}
