/**
 * `mcp.path` answered by Outrigger itself (`mcp.server: outrigger`, SPEC §11): the official MCP
 * TypeScript SDK's low-level `Server` (v2, `@modelcontextprotocol/server`), stateless, in both
 * protocol eras:
 * - 2026-07-28 requests (each carries its own `_meta` envelope and the `Mcp-Method` / `Mcp-Name`
 *   headers; no `initialize`; `server/discover`) go to the SDK's `createMcpHandler`, which
 *   validates the envelope and headers and answers JSON (no handler here emits anything before its
 *   result, so the `auto` response mode never upgrades to a stream);
 * - 2025-era requests (`initialize`, then `tools/list`/`tools/call` with `MCP-Protocol-Version`
 *   2025-06-18 or 2025-11-25, or older) go to the SDK's Streamable HTTP transport with no session
 *   id generator and JSON answers, as before.
 * The SDK's own `isLegacyRequest` decides which, so the routing is the SDK's and cannot disagree
 * with it. Both legs build a `Server` per request from one factory (`serverFor`), whose handlers
 * close over the request's caller; nothing outlives the answer.
 *
 * In front, in this order: authentication has run (the request chain; an invalid key already got
 * §5.6's challenge); an anonymous caller gets the 401 challenge so an SDK client signs in through
 * the browser; `GET` (the stream a stateful server would open) and other methods get 405; the
 * body is read up to the GraphQL request's bound (1 MiB, 413 beyond) and a JSON-RPC batch holds
 * at most MAX_BATCH messages, whose results together are at most `mcp.maxResponseBytes` (their
 * tool calls run one at a time, answer-budget.ts); `subscriptions/listen` (2026-07-28's long-lived
 * stream of list changes and resource updates, and 2025-11-25's resources/subscribe) is served beside the SDK, by listen/. Any authenticated caller may
 * use the server itself; what each tool may do is decided by the GraphQL door it calls
 * (call-graphql.ts).
 */
import { createMcpHandler, isLegacyRequest, ProtocolError, ProtocolErrorCode, Server, WebStandardStreamableHTTPServerTransport, type McpRequestContext, type Tool } from '@modelcontextprotocol/server';
import type { AppContext } from '../app-context.js';
import { forbidden, methodNotAllowed } from '../errors.js';
import { readBody } from '../http/body.js';
import { originAllowed } from '../net/origin.js';
import type { OwnRoute } from '../http/route-table.js';
import type { RequestScope } from '../http/scope.js';
import { parseBoundedJson } from '../input-limits/json-depth.js';
import { mcpSignInRequired } from '../oauth/challenge.js';
import { MAX_BODY_BYTES } from '../graphql/types.js';
import { AnswerBudget } from './answer-budget.js';
import { callThroughGraphql, failure, notRun, type Caller, type GraphqlDoor, type GraphqlRequest } from './call-graphql.js';
import { readOnlyProblem, requestOf } from './query-tool.js';
import { installResources, listed, type ResourceDoor } from './resources.js';
import { Listeners } from './listen/listeners.js';
import type { UriUpdates } from './listen/uri-updates.js';
import type { Principal } from '../principal/principal.js';
import type { CatalogueTool, ToolCatalogue } from './catalogue.js';
import { checkArguments } from './check-arguments.js';
import { IDEMPOTENCY_ARGUMENT, withIdempotencyKeyRequired } from './input-schema.js';
import { createMayCall, innerExchange, type MayCall } from './may-call.js';
import { keyRequiredWhere } from '../idempotency/required.js';
import { isJsonObject } from '../util/objects.js';

/** JSON-RPC messages one POST may carry (batches are 2025-03-26's; later revisions send one). */
export const MAX_BATCH = 10;
const SERVER_INFO = { name: 'outrigger', version: process.env.npm_package_version ?? '0.1.0' };
/** Headers the SDK reads (besides `mcp-*`: `Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`); the rest of the request stays with the request chain. */
const TRANSPORT_HEADERS = new Set(['accept', 'content-type', 'last-event-id']);

export interface McpRouteOptions {
  readonly catalogue: ToolCatalogue;
  /** The client tool calls go through, its connections known to the address resolver (internal-calls.ts). */
  readonly dispatcher: GraphqlDoor['dispatcher'];
  /** Names a `/mcp` answer to the inner calls made for it (internal-calls.ts `hold`): their changes wait for it. */
  readonly hold?: GraphqlDoor['hold'];
  /** `oauthEndpoints(config).resourceMetadata`, or null when agent sign-in is off. */
  readonly resourceMetadataUrl: string | null;
  /** The resources `mcp.resources` exposes (resources.ts), or null when it names none. */
  readonly resources: ResourceDoor | null;
  /** Per-URI change notifications from the change feed (listen/uri-updates.ts), or null without resources. */
  readonly updates: UriUpdates | null;
  /** The proxy's authenticator once attached: each listener's credentials are checked again every second. */
  readonly authenticate: () => ((scope: RequestScope) => Promise<Principal> | Principal) | undefined;
}

/** The route; `listChanged` when the apps or permissions changed (listen/listeners.ts); `close` for the module's stop. */
export function createMcpRoute(context: AppContext, options: McpRouteOptions): OwnRoute & { close(): Promise<void>; listChanged(): void } {
  const { config, acl } = context;
  const { catalogue } = options;
  const graphqlPrefix = config.routes.graphql;
  const door: GraphqlDoor = { graphqlPrefix, timeoutMs: config.graphql.timeoutMs + 5000, dispatcher: options.dispatcher, ...(options.hold ? { hold: options.hold } : {}) };
  const ownOrigin = new URL(config.service.publicUrl).origin;

  const writesDecided = config.graphql.backend.auth === 'caller' && config.acl.mode === 'enforce';
  const mayCall = createMayCall({ acl, graphqlPrefix, collectionPath: config.graphql.backend.collectionPath, writesDecided });
  const serverFor = serverFactory({ catalogue, mayCall, keyRequired: keyRequiredOf(config.idempotency.required, graphqlPrefix) }, door, options.resources);
  const listeners = listenersFor(context, { catalogue, mayCall }, options);
  // 2026-07-28: one handler for the process, its per-request `Server` made by the same factory
  // (the SDK hands the factory the Request it was given; `callers` maps it back to its caller).
  const callers = new WeakMap<Request, Caller>();
  const modern = createMcpHandler(
    (context: McpRequestContext) => {
      const caller = context.requestInfo ? callers.get(context.requestInfo) : undefined;
      if (!caller) throw new Error('an MCP request reached the 2026-07-28 handler without its caller');
      return serverFor(caller, true);
    },
    { legacy: 'reject', responseMode: 'auto', maxRequestBodySize: MAX_BODY_BYTES },
  );

  return {
    close: async () => {
      listeners.closeAll();
      await modern.close();
    },
    listChanged: () => listeners.notify(),
    kind: 'mcp',
    prefix: config.mcp.path,
    async handle(scope) {
      // MCP transports: a browser's request from a page of another site (DNS rebinding) is 403.
      const origin = scope.req.headers.origin;
      if (typeof origin === 'string' && !originAllowed(origin, ownOrigin)) throw forbidden(`requests from pages of ${origin} are refused (the MCP server accepts its own origin and loopback pages)`);
      if (scope.principal.via === 'anonymous') throw options.resourceMetadataUrl ? mcpSignInRequired(scope, options.resourceMetadataUrl) : acl.denial(scope.principal);
      if (scope.path !== config.mcp.path) return void answer(scope, 404, rpcError(-32600, `nothing at ${scope.path}; the MCP endpoint is ${config.mcp.path}`));
      // Stateless: no stream to open (GET) and no session to end (DELETE).
      if (scope.method !== 'POST') throw methodNotAllowed(['POST']);
      const body = await readBody(scope, MAX_BODY_BYTES);
      const parsed = parseBoundedJson(body.toString('utf8'));
      if (!parsed.ok) return void answer(scope, 400, rpcError(-32700, parsed.tooDeep ? `the request body ${parsed.message}` : 'the request body is not valid JSON'));
      if (Array.isArray(parsed.value) && parsed.value.length > MAX_BATCH)
        return void answer(scope, 400, rpcError(-32600, `a batch of ${parsed.value.length} JSON-RPC messages; at most ${MAX_BATCH} in one request`));

      const message: unknown = Array.isArray(parsed.value) ? undefined : parsed.value;
      // Built beside the SDK (listen/listeners.ts): each stream is its caller's, bounded per principal.
      if (isJsonObject(message) && message.method === 'subscriptions/listen') return listeners.serve(scope, message);

      const controller = new AbortController();
      const onClose = () => {
        if (!scope.res.writableFinished) controller.abort();
      };
      scope.res.once('close', onClose);
      const headers = new Headers();
      for (const [name, value] of Object.entries(scope.req.headers)) if (typeof value === 'string' && (TRANSPORT_HEADERS.has(name) || name.startsWith('mcp-'))) headers.set(name, value);
      const request = new Request(`http://outrigger${config.mcp.path}`, { method: 'POST', headers, signal: controller.signal });
      const caller: Caller = { scope, signal: controller.signal, budget: new AnswerBudget(config.mcp.maxResponseBytes) };
      try {
        let response: Response;
        const legacy = await isLegacyRequest(request, parsed.value);
        // 2025-11-25's resources/subscribe: answered on its own held stream, beside the SDK (listen/listeners.ts).
        if (legacy && (await listeners.serveLegacy(scope, message))) return;
        if (legacy) {
          // 2025-era: the SDK's stateless Streamable HTTP transport, answering JSON.
          const server = serverFor(caller, false);
          const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          try {
            await server.connect(transport);
            response = await transport.handleRequest(request, { parsedBody: parsed.value });
          } finally {
            await transport.close().catch(() => {});
            await server.close().catch(() => {});
          }
        } else {
          callers.set(request, caller);
          response = await modern.fetch(request, { parsedBody: parsed.value });
        }
        // The bytes as the SDK encoded them, written as they are: no second copy as a string.
        const bytes = Buffer.from(await response.arrayBuffer());
        if (controller.signal.aborted || scope.res.destroyed) return;
        const out: Record<string, string> = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
        response.headers.forEach((value, name) => (out[name] = value));
        if (bytes.length > 0) out['content-length'] = String(bytes.length);
        scope.res.writeHead(response.status, out);
        scope.res.end(bytes);
      } finally {
        scope.res.off('close', onClose);
      }
    },
  };
}

/** The listeners (listen/listeners.ts), each caller's lists as tools/list and resources/list answer them. */
function listenersFor(context: AppContext, tools: { catalogue: ToolCatalogue; mayCall: MayCall }, options: McpRouteOptions): Listeners {
  const { catalogue, mayCall } = tools;
  const { resources } = options;
  return new Listeners({
    bounds: context.config.subscriptions,
    lists: {
      tools: (scope) =>
        [...catalogue.list()]
          .flatMap((tool) => (mayCall(scope, tool) ? [tool.name] : []))
          .sort()
          .join('\n'),
      resources: (scope) =>
        resources
          ? listed(resources, scope)
              .map((c) => `${c.db}/${c.collection}`)
              .join('\n')
          : null,
    },
    offersResources: resources !== null,
    updates: options.updates,
    authenticate: options.authenticate,
  });
}

/** Whether `idempotency.required` asks this caller's calls of this tool for `idempotencyKey` (the GraphQL door refuses them without it). */
type KeyRequired = (scope: RequestScope, tool: CatalogueTool) => boolean;

/** SPEC §14: where `idempotency.required` matches the tool's `POST /graphql/<uri>` for this caller, its key is a required argument. */
function keyRequiredOf(conditions: readonly string[], graphqlPrefix: string): KeyRequired {
  const required = keyRequiredWhere(conditions);
  if (required === undefined) return () => false;
  return (scope, tool) => tool.takesIdempotencyKey && required(innerExchange(scope, 'POST', `${graphqlPrefix}/${tool.app.uri}`));
}

function describeTool(tool: CatalogueTool, keyRequired: boolean): Tool {
  const inputSchema = keyRequired ? withIdempotencyKeyRequired(tool.inputSchema) : tool.inputSchema;
  return { name: tool.name, title: tool.annotations.title, description: tool.description, inputSchema: inputSchema as Tool['inputSchema'], annotations: tool.annotations };
}

/** A Server per caller: the tools it may list and call, each call within its answer's budget. */
function serverFactory(
  tools: { catalogue: ToolCatalogue; mayCall: MayCall; keyRequired: KeyRequired },
  door: GraphqlDoor,
  resources: ResourceDoor | null,
): (caller: Caller, modern: boolean) => Server {
  const { catalogue, mayCall, keyRequired } = tools;
  return (caller, modern) => {
    const { scope, signal, budget } = caller;
    // List changes reach 2026-07-28 listeners (subscriptions/listen), and a 2025-era client on its
    // open resources/subscribe stream (its only stream: GET is 405), so only where resources are offered.
    const server = new Server(SERVER_INFO, {
      capabilities: { tools: { listChanged: modern || resources !== null }, ...(resources ? { resources: { subscribe: true, listChanged: true } } : {}) },
      instructions: `Each tool runs one GraphQL operation of this service with your own permissions; tools/list shows the ones you may call.${resources ? ' Resources are collections and documents, read as a REST GET with your own permissions.' : ''}`,
    });
    if (resources) installResources(server, resources, caller);
    server.setRequestHandler('tools/list', () => {
      const tools = [...catalogue.list()].filter((tool) => mayCall(scope, tool)).map((tool) => describeTool(tool, keyRequired(scope, tool)));
      if (!budget.take(Buffer.byteLength(JSON.stringify(tools)), 'tools/list'))
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `the tool list does not fit what is left of this request's answer bound (mcp.maxResponseBytes, ${budget.limit} bytes); ask for it in a request of its own`,
        );
      return { tools };
    });
    server.setRequestHandler('tools/call', async (request) => {
      const tool = catalogue.get(request.params.name);
      if (!tool || !mayCall(scope, tool))
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no tool named ${JSON.stringify(request.params.name)} is offered to you; tools/list names the ones you may call`);
      const args = request.params.arguments ?? {};
      // Before any backend read (MCP 2025-11-25: input errors are tool results the model can correct).
      const problems = checkArguments(tool.inputSchema, args);
      if (problems.length > 0) return failure(`invalid arguments for ${tool.name}: ${problems.join('; ')}`);
      // SPEC §14: the key is the inner request's Idempotency-Key, not a variable (nor part of the fingerprint).
      const { variables, idempotencyKey } = splitIdempotencyKey(tool, args);
      let graphqlRequest: GraphqlRequest = { query: tool.query, variables, operationName: tool.operationName };
      if (tool.anyQuery) {
        graphqlRequest = requestOf(args);
        const refused = readOnlyProblem(graphqlRequest.query);
        if (refused !== null) return failure(`${tool.name}: ${refused}`);
      }
      // One call at a time, each within what the earlier ones left (answer-budget.ts).
      return budget.serial(async () => (budget.filled !== null ? notRun(budget, tool.name) : callThroughGraphql(door, { scope, signal, budget }, tool, graphqlRequest, idempotencyKey)));
    });
    return server;
  };
}

/** A mutation tool's arguments less `idempotencyKey` (checked a string by the input schema), and the key. */
function splitIdempotencyKey(tool: CatalogueTool, args: Record<string, unknown>): { variables: Record<string, unknown>; idempotencyKey?: string } {
  if (!tool.takesIdempotencyKey || !Object.hasOwn(args, IDEMPOTENCY_ARGUMENT)) return { variables: args };
  const { [IDEMPOTENCY_ARGUMENT]: key, ...variables } = args;
  return typeof key === 'string' ? { variables, idempotencyKey: key } : { variables };
}

function rpcError(code: number, message: string, id: unknown = null): string {
  return JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: typeof id === 'string' || typeof id === 'number' ? id : null });
}

function answer(scope: RequestScope, status: number, body: string): void {
  scope.res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' });
  scope.res.end(body);
}
