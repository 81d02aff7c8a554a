/**
 * A tool call through the same door as GraphQL (SPEC §11): exactly `POST /graphql/<uri>` with the
 * tool's operation and the agent's arguments as variables, sent to this very server (the address
 * the MCP request arrived on) with the agent's own `Authorization` header. The request therefore meets everything a client's
 * GraphQL request meets, in the order the request chain applies it and with no second copy of any
 * rule: authentication, rate limits and quotas, the ACL on `/graphql/<uri>`, readFilter and
 * projectResponse, the cost limit, the deadline, webhooks and traces (the call's `traceparent`
 * makes it a child of the `/mcp` request's span). The answer becomes a tool result: `data` as
 * `structuredContent` with its JSON text as content (a result past BOTH_FORMS_MAX_BYTES as the
 * text alone); GraphQL errors, or a refusal (401, 403, 429, 503..., GraphQL-shaped since SPEC §15
 * or in the error format under `httpProfile: restheart`), as `isError: true` with their messages. Each result is charged to its request's answer budget
 * (answer-budget.ts).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { request, type Dispatcher } from 'undici';
import type { RequestScope } from '../http/scope.js';
import { jsonStringBytes, type AnswerBudget } from './answer-budget.js';
import type { CatalogueTool } from './catalogue.js';
import { OUTER_ANSWER_HEADER } from './internal-calls.js';

export interface GraphqlDoor {
  /** `routes.graphql` (default `/graphql`). */
  readonly graphqlPrefix: string;
  /** How long one call may take in all (the GraphQL deadline plus the loopback's own time). */
  readonly timeoutMs: number;
  /** Kept-alive connections to this server whose own ends (address, port) the request chain knows as this process's (internal-calls.ts). */
  readonly dispatcher: Dispatcher;
  /** The token naming the `/mcp` answer a call's changes wait for (internal-calls.ts `hold`). */
  readonly hold?: (res: RequestScope['res']) => string;
}

/** The origin the MCP request came in on: this server, reachable from itself. */
export function selfOrigin(scope: RequestScope): string {
  const socket = scope.req.socket;
  let address = socket.localAddress ?? '127.0.0.1';
  if (address.startsWith('::ffff:')) address = address.slice(7);
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${socket.localPort}`;
}

/** The body of the inner `POST /graphql/<uri>`: the tool's operation with the arguments as variables, or (`<uri>_query`) the agent's own query. */
export interface GraphqlRequest {
  readonly query: string;
  readonly variables: unknown;
  readonly operationName: string | null;
}

/** What a per-request `Server` needs to know of its request: whose it is, and when the client left. */
export interface Caller {
  readonly scope: RequestScope;
  readonly signal: AbortSignal;
  /** What the answer's results may still take (`mcp.maxResponseBytes`); its tool calls run one at a time. */
  readonly budget: AnswerBudget;
}

/** The headers of an inner request made for the agent (a tool call, a resource read): its identity, its address, its trace. */
export function innerHeaders(scope: RequestScope, what: string): Record<string, string> {
  const headers: Record<string, string> = {
    accept: 'application/json',
    // The agent's identity is its own header: the inner request authenticates exactly as it would.
    ...(scope.req.headers.authorization ? { authorization: scope.req.headers.authorization } : {}),
    'x-request-id': `${scope.id}.${what}`,
    // The agent's address, believed only on this process's own connections (internal-calls.ts).
    'x-forwarded-for': scope.clientIp,
    'user-agent': `outrigger-mcp (${String(scope.req.headers['user-agent'] ?? 'unknown agent').slice(0, 200)})`,
  };
  const traceparent = scope.trace?.traceparent;
  if (traceparent) headers.traceparent = traceparent;
  return headers;
}

/** A result carries its data twice (text and `structuredContent`) up to this size; a larger one once, as text (issue 53). */
export const BOTH_FORMS_MAX_BYTES = 64 * 1024;
/** What a result adds around its texts and structured content (`{"content":[{"type":"text","text":…}],…}`). */
const RESULT_OVERHEAD = 96;

/**
 * One call, charged to its request's answer budget: the inner answer is read only as far as the
 * budget has room (the connection is dropped past it), and a result that does not fit is replaced
 * by an error naming the bound, after which the budget is filled.
 */
export async function callThroughGraphql(door: GraphqlDoor, caller: Caller, tool: CatalogueTool, graphqlRequest: GraphqlRequest, idempotencyKey?: string): Promise<CallToolResult> {
  const { scope, signal, budget } = caller;
  const headers: Record<string, string> = { ...innerHeaders(scope, 'tool'), 'content-type': 'application/json' };
  // SPEC §14: the tool's `idempotencyKey` as the header the GraphQL door claims it by (a Structured Field string).
  if (idempotencyKey !== undefined) headers['idempotency-key'] = `"${idempotencyKey.replace(/[\\"]/g, '\\$&')}"`;
  // SPEC §11.1: the call's changes reach listeners once the agent has this answer, not the inner one.
  if (door.hold) headers[OUTER_ANSWER_HEADER] = door.hold(scope.res);
  let status: number;
  let retryAfter: string | undefined;
  let replayed = false;
  let text: string;
  const deadline = AbortSignal.timeout(door.timeoutMs);
  // The result holds at least the answer's data, so an answer past what is left cannot fit.
  const cap = budget.left + RESULT_OVERHEAD;
  try {
    const response = await request(`${selfOrigin(scope)}${door.graphqlPrefix}/${tool.app.uri}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(graphqlRequest),
      signal: AbortSignal.any([signal, deadline]),
      dispatcher: door.dispatcher,
    });
    status = response.statusCode;
    const header = response.headers['retry-after'];
    retryAfter = Array.isArray(header) ? header[0] : header;
    replayed = response.headers['idempotent-replayed'] === 'true';
    const read = await readUpTo(response.body, cap);
    if (read === null) return tooLarge(budget, tool, `its GraphQL answer is larger than the ${budget.left} bytes left`);
    text = read;
  } catch (error) {
    if (signal.aborted) throw error; // the agent left: nobody to answer
    return charged(budget, tool, failure(`the GraphQL request did not complete: ${deadline.aborted ? `no answer within ${door.timeoutMs} ms` : (error as Error).message}`), 0);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return charged(budget, tool, failure(`the GraphQL request answered ${status} with a body that is not JSON`), 0);
  }
  // SPEC §14: the door's 400 for a mutation without the header (idempotency.required), said in the tool's own terms.
  if (idempotencyKey === undefined && status === 400 && codeOf(body) === 'IDEMPOTENCY_KEY_REQUIRED') return charged(budget, tool, keyRequired(tool), 0);
  const { result, structuredBytes } = resultOf(status, retryAfter, body, text);
  // A replay answers the first call's result under this call's id; `_meta` says so.
  return charged(budget, tool, replayed ? { ...result, _meta: { idempotentReplayed: true } } : result, structuredBytes);
}

function codeOf(body: unknown): unknown {
  return (body as GraphqlAnswer | null)?.errors?.[0]?.extensions?.code;
}

/** A mutation tool called without `idempotencyKey` where `idempotency.required` asks for one: nothing ran. */
function keyRequired(tool: CatalogueTool): CallToolResult {
  return failure(
    `IDEMPOTENCY_KEY_REQUIRED: ${tool.name} must be called with an idempotencyKey argument here (idempotency.required): a key you choose for this call (1-255 visible ASCII characters, e.g. a new UUID), sent again unchanged if you retry it; nothing ran`,
  );
}

/** The result if it fits what is left of the answer's bound; otherwise an error naming the bound. */
function charged(budget: AnswerBudget, tool: CatalogueTool, result: CallToolResult, structuredBytes: number): CallToolResult {
  let bytes = RESULT_OVERHEAD + structuredBytes;
  for (const item of result.content) if (item.type === 'text') bytes += jsonStringBytes(item.text);
  if (budget.take(bytes, tool.name)) return result;
  return tooLarge(budget, tool, `its result would take ${bytes} bytes of the ${budget.left} left`);
}

function tooLarge(budget: AnswerBudget, tool: CatalogueTool, why: string): CallToolResult {
  budget.take(Infinity, tool.name);
  return failure(
    `the result of ${tool.name} was not sent: ${why} of this request's answer bound (mcp.maxResponseBytes, ${budget.limit} bytes for all results of one POST /mcp); ` +
      'ask for less (a smaller limit, fewer fields), or send it in a request of its own',
  );
}

/** A call after one whose result did not fit: not run at all. */
export function notRun(budget: AnswerBudget, name: string): CallToolResult {
  return failure(
    `${name} was not run: the result of ${budget.filled} in this request did not fit its answer bound (mcp.maxResponseBytes, ${budget.limit} bytes for all results of one POST /mcp); send ${name} in a request of its own`,
  );
}

/** The body as text, or null once it passes `cap` bytes (the rest is not read: the connection is dropped). */
export async function readUpTo(body: Dispatcher.ResponseData['body'], cap: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/**
 * The tool result of a GraphQL answer, and the bytes its `structuredContent` takes in the JSON
 * answer. `text` is the answer as the GraphQL route serialized it: a plain `{"data":…}` answer's
 * data is that text's slice, so it is serialized once, not parsed and written again.
 */
function resultOf(status: number, retryAfter: string | undefined, body: unknown, text: string): { result: CallToolResult; structuredBytes: number } {
  const answer = (body ?? {}) as GraphqlAnswer;
  // A refusal before GraphQL ran (401, 403, 404, 413, 429, 503): its status and when to retry.
  const refused = status >= 300 ? refusalMessage(status, answer) : undefined;
  if (refused !== undefined) return { result: failure(`${status}: ${refused}${retryAfter ? ` (retry after ${retryAfter} s)` : ''}`), structuredBytes: 0 };
  if (Array.isArray(answer.errors) && answer.errors.length > 0) {
    const lines = answer.errors.slice(0, 20).map((e) => {
      const code = typeof e.extensions?.code === 'string' ? `${e.extensions.code}: ` : '';
      const path = Array.isArray(e.path) ? ` (at ${e.path.join('.')})` : '';
      return `${code}${String(e.message)}${path}`;
    });
    // `{data, errors}` is the answer itself: its size is the text's.
    return {
      result: { isError: true, content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...(answer.data !== undefined ? { data: answer.data } : {}), errors: answer.errors } },
      structuredBytes: Buffer.byteLength(text),
    };
  }
  if (status >= 200 && status < 300 && answer.data !== undefined && answer.data !== null && typeof answer.data === 'object') {
    const plain = text.startsWith('{"data":') && text.endsWith('}') && Object.keys(answer).length === 1;
    const data = plain ? text.slice('{"data":'.length, -1) : JSON.stringify(answer.data);
    const bytes = Buffer.byteLength(data);
    if (bytes > BOTH_FORMS_MAX_BYTES) return { result: { content: [{ type: 'text', text: data }] }, structuredBytes: 0 };
    return { result: { content: [{ type: 'text', text: data }], structuredContent: answer.data as Record<string, unknown> }, structuredBytes: bytes };
  }
  return { result: failure(`${status}: the GraphQL request answered ${status}${retryAfter ? ` (retry after ${retryAfter} s)` : ''}`), structuredBytes: 0 };
}

type GraphqlAnswer = { data?: unknown; errors?: Array<{ message?: unknown; path?: unknown; extensions?: { code?: unknown } }>; message?: unknown };

/** The code a refusal of each status carries on `/graphql/<uri>` (graphql/serve/refusal.ts); the handler's own errors carry others. */
const REFUSAL_CODES: Readonly<Record<number, string>> = {
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'APP_NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/**
 * The message of a refusal: GraphQL-shaped (SPEC §15: one error, no data, its status's code) or,
 * under `graphql.httpProfile: restheart`, the error format (SPEC §0: `message`).
 */
function refusalMessage(status: number, answer: GraphqlAnswer): string | undefined {
  if (typeof answer.message === 'string') return answer.message;
  const only = answer.data === undefined && Array.isArray(answer.errors) && answer.errors.length === 1 ? answer.errors[0] : undefined;
  return only !== undefined && only.extensions?.code === REFUSAL_CODES[status] ? String(only.message) : undefined;
}

export function failure(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}
