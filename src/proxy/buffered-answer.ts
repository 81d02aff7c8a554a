/**
 * A proxied answer kept whole before it is sent: rewritten (projectResponse, SPEC §3.6) when the
 * request needs it, and held until an observer is done when it asks (subscriptions read a written
 * document back before its writer is answered, SPEC §6.5). Everything else streams (forwarder.ts).
 */
import { OutriggerError } from '../errors.js';
import type { ForwardRequest } from './forward-request.js';
import { clientResponseHeaders } from './headers.js';

export interface BufferedAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly chunks: readonly Buffer[];
  readonly rewriting: boolean;
  readonly held: ((body: Buffer) => Promise<void>) | undefined;
}

/** Sends a buffered answer (after its hold, when one was asked); an OutriggerError when its body cannot be rewritten (nothing sent then). */
export function sendBuffered(f: ForwardRequest, answer: BufferedAnswer): OutriggerError | undefined {
  let body: Buffer = Buffer.concat(answer.chunks);
  try {
    // An empty body (a write answered without one, a HEAD) has nothing to rewrite: the
    // backend's status stands. A 502 there told the client a write that was applied had failed.
    if (body.length > 0 && answer.rewriting) body = f.rewrite!.apply(body);
  } catch {
    return new OutriggerError(502, 'UPSTREAM_BAD_BODY', 'the upstream answer could not be rewritten as this request requires (its body is not valid JSON)');
  }
  const headers = clientResponseHeaders(answer.headers, f.filterResponseHeader);
  // Rewritten bodies were asked for uncompressed; a body only held is sent as it came.
  if (answer.rewriting) delete headers['content-encoding'];
  if (body.length > 0 || (answer.status !== 204 && f.method !== 'HEAD')) headers['content-length'] = body.length;
  else delete headers['content-length'];
  f.observer?.onResponseHead(answer.status, headers);
  f.observer?.onResponseData(body);
  headers['x-request-id'] = f.requestId;
  if (f.responseHeaders) Object.assign(headers, f.responseHeaders);
  const res = f.res;
  const send = (): void => {
    if (res.destroyed) return;
    res.writeHead(answer.status, headers);
    res.end(body);
  };
  if (answer.held) answer.held(body).then(send, send);
  else send();
  return undefined;
}
