/**
 * The request writer: what goes upstream for one proxied request (headers rewritten once, the
 * body streamed, buffered or handed over, the target under upstream.url's path), as undici's
 * dispatch options. Built once per request; request buffering replaces the body later.
 */
import type { Dispatcher } from 'undici';
import type { ForwardRequest } from './forward-request.js';
import { upstreamRequestHeaders } from './headers.js';
import { replaceContentLength } from './request-body.js';

export function upstreamRequest(f: ForwardRequest, origin: string, basePath: string, hasBody: boolean): Dispatcher.DispatchOptions {
  const headers = upstreamRequestHeaders(f.req.headers, f.req.rawHeaders, {
    clientIp: f.clientIp,
    peerTrusted: f.peerTrusted,
    proto: f.secure ? 'https' : 'http',
    remove: f.removeRequestHeaders,
    set: f.setRequestHeaders,
  });
  if (Buffer.isBuffer(f.body)) replaceContentLength(headers, f.body.length);
  return {
    origin,
    path: basePath + f.target,
    method: f.method as Dispatcher.HttpMethod,
    headers,
    body: (hasBody ? (f.body ?? f.req) : null) as Dispatcher.DispatchOptions['body'],
    // A request from a client that went away must not keep an upstream socket busy.
    idempotent: f.method === 'GET' || f.method === 'HEAD',
  };
}
