/**
 * A tool call through the same door as GraphQL (SPEC §11): exactly `POST /graphql/<uri>` with the
 * tool's operation and the agent's arguments as variables, sent to this very server over loopback
 * with the agent's own `Authorization` header. The request therefore meets everything a client's
 * GraphQL request meets, in the order the request chain applies it and with no second copy of any
 * rule: authentication, rate limits and quotas, the ACL on `/graphql/<uri>`, readFilter and
 * projectResponse, the cost limit, the deadline, webhooks and traces (the call's `traceparent`
 * makes it a child of the `/mcp` request's span). The answer becomes a tool result: `data` as
 * `structuredContent` with its JSON text as content; GraphQL errors, or a refusal in the error
 * format (401, 403, 429, 503...), as `isError: true` with their messages.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { request, type Dispatcher } from 'undici';
import type { RequestScope } from '../http/scope.js';
import type { CatalogueTool } from './catalogue.js';

export interface GraphqlDoor {
  /** `routes.graphql` (default `/graphql`). */
  readonly graphqlPrefix: string;
  /** How long one call may take in all (the GraphQL deadline plus the loopback's own time). */
  readonly timeoutMs: number;
  /** Kept-alive loopback connections whose ports the request chain knows as this process's own (internal-calls.ts). */
  readonly dispatcher: Dispatcher;
}

/** The origin the MCP request came in on: this server, reachable from itself. */
function selfOrigin(scope: RequestScope): string {
  const socket = scope.req.socket;
  let address = socket.localAddress ?? '127.0.0.1';
  if (address.startsWith('::ffff:')) address = address.slice(7);
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${socket.localPort}`;
}

export async function callThroughGraphql(door: GraphqlDoor, scope: RequestScope, tool: CatalogueTool, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json',
    // The agent's identity is its own header: the inner request authenticates exactly as it would.
    ...(scope.req.headers.authorization ? { authorization: scope.req.headers.authorization } : {}),
    'x-request-id': `${scope.id}.tool`,
    // The agent's address, believed only on this process's own loopback connections (internal-calls.ts).
    'x-forwarded-for': scope.clientIp,
    'user-agent': `outrigger-mcp (${String(scope.req.headers['user-agent'] ?? 'unknown agent').slice(0, 200)})`,
  };
  const traceparent = scope.trace?.traceparent;
  if (traceparent) headers.traceparent = traceparent;
  let status: number;
  let retryAfter: string | undefined;
  let text: string;
  const deadline = AbortSignal.timeout(door.timeoutMs);
  try {
    const response = await request(`${selfOrigin(scope)}${door.graphqlPrefix}/${tool.app.uri}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: tool.query, variables: args, operationName: tool.operationName }),
      signal: AbortSignal.any([signal, deadline]),
      dispatcher: door.dispatcher,
    });
    status = response.statusCode;
    const header = response.headers['retry-after'];
    retryAfter = Array.isArray(header) ? header[0] : header;
    text = await response.body.text();
  } catch (error) {
    if (signal.aborted) throw error; // the agent left: nobody to answer
    return failure(`the GraphQL request did not complete: ${deadline.aborted ? `no answer within ${door.timeoutMs} ms` : (error as Error).message}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return failure(`the GraphQL request answered ${status} with a body that is not JSON`);
  }
  return resultOf(status, retryAfter, body);
}

function resultOf(status: number, retryAfter: string | undefined, body: unknown): CallToolResult {
  const answer = (body ?? {}) as { data?: unknown; errors?: Array<{ message?: unknown; path?: unknown; extensions?: { code?: unknown } }>; message?: unknown };
  if (Array.isArray(answer.errors) && answer.errors.length > 0) {
    const lines = answer.errors.slice(0, 20).map((e) => {
      const code = typeof e.extensions?.code === 'string' ? `${e.extensions.code}: ` : '';
      const path = Array.isArray(e.path) ? ` (at ${e.path.join('.')})` : '';
      return `${code}${String(e.message)}${path}`;
    });
    return { isError: true, content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...(answer.data !== undefined ? { data: answer.data } : {}), errors: answer.errors } };
  }
  if (status >= 200 && status < 300 && answer.data !== undefined && answer.data !== null && typeof answer.data === 'object') {
    return { content: [{ type: 'text', text: JSON.stringify(answer.data) }], structuredContent: answer.data as Record<string, unknown> };
  }
  // The error format (SPEC §0): a refusal before GraphQL ran (401, 403, 404, 413, 429, 503).
  const message = typeof answer.message === 'string' ? answer.message : `the GraphQL request answered ${status}`;
  return failure(`${status}: ${message}${retryAfter ? ` (retry after ${retryAfter} s)` : ''}`);
}

export function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}
