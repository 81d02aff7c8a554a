/**
 * MCP resources (SPEC §11.1): the collections `mcp.resources` exposes, listed, templated and read.
 * `resources/read` is the REST `GET` of the same path sent to this very server with the agent's
 * own `Authorization`, as a tool call is sent to the GraphQL door (call-graphql.ts): the ACL,
 * `readFilter` and `projectResponse`, rate limits and quotas and whatever else the request chain
 * applies decide it, with no second copy of any rule. A filter in a query URI is the REST
 * `filter`, which the door ANDs with the readFilter, so it cannot widen what the caller sees.
 * Anything but a 2xx answer is an error naming the URI and the status, never the body.
 *
 * `ttlMs` (2026-07-28) is the first response-cache rule (`cache.rules`, SPEC §12) matching the
 * read's `GET`: its `maxAgeSeconds` × 1000, else 0; `cacheScope` is `private`, answers depend on
 * the caller.
 */
import { ProtocolError, ProtocolErrorCode, type ReadResourceResult, type Resource, type ResourceTemplateType, type Server } from '@modelcontextprotocol/server';
import { request, type Dispatcher } from 'undici';
import type { AccessControl } from '../access/permissions/access-control.js';
import { exchangeFromParts, type Condition, type Exchange } from '../condition/index.js';
import type { RequestScope } from '../http/scope.js';
import { accessFacts } from '../principal/access-facts.js';
import { jsonStringBytes } from './answer-budget.js';
import { innerHeaders, readUpTo, selfOrigin, type Caller } from './call-graphql.js';
import { collectionUri, literalCollection, parseResourceUri, SCHEME, type ResourceTarget } from './resource-uris.js';

const MIME = 'application/json';
const QUERY_TEMPLATE = '{?filter,sort,pagesize,page}';

export interface ResourceDoor {
  readonly acl: AccessControl<Exchange>;
  /** `graphql.backend.collectionPath`: how a collection's REST path is made. */
  readonly collectionPath: string;
  /** `mcp.resources`, as written (for the literal collections) and parsed. */
  readonly conditions: ReadonlyArray<{ readonly text: string; readonly condition: Condition }>;
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  /** Milliseconds a read may be kept: the first §12 cache rule matching its `GET` (`maxAgeSeconds` × 1000), else 0. */
  readonly ttlFor: (exchange: Exchange) => number;
}

function exchangeOf(scope: RequestScope, path: string): Exchange {
  return exchangeFromParts({
    method: 'GET',
    path,
    headers: Object.entries(scope.req.headers).flatMap(([k, v]) => (v === undefined ? [] : [v].flat().map((one) => [k, one] as const))),
    remoteIp: scope.clientIp,
    secure: scope.secure,
    ...accessFacts(scope.principal),
  });
}

/** Whether `mcp.resources` exposes this path to this caller (a condition may read the caller, as the ACL's do). */
export function exposed(door: ResourceDoor, scope: RequestScope, path: string): boolean {
  const exchange = exchangeOf(scope, path);
  return door.conditions.some(({ condition }) => condition.evaluate(exchange));
}

/** Whether the ACL allows this caller the `GET` of a path (the listing's question; a read asks the door itself). */
export function mayRead(door: ResourceDoor, scope: RequestScope, path: string): boolean {
  return door.acl.isAdmin(scope.principal) || door.acl.decide(scope.principal, exchangeOf(scope, path)).allowed;
}

/** The exposed collections a condition names literally, the caller may read. */
export function listed(door: ResourceDoor, scope: RequestScope): Array<{ db: string; collection: string; path: string }> {
  const out = new Map<string, { db: string; collection: string; path: string }>();
  for (const { text } of door.conditions) {
    const named = literalCollection(text, door.collectionPath);
    if (!named) continue;
    const target = parseResourceUri(collectionUri(named.db, named.collection), door.collectionPath);
    if (!target.ok || out.has(target.target.uri)) continue;
    const path = target.target.pathOnly;
    if (exposed(door, scope, path) && mayRead(door, scope, path)) out.set(target.target.uri, { ...named, path });
  }
  return [...out.values()];
}

/** The `resources/*` handlers of one request's `Server` (its caller's own lists and reads). */
export function installResources(server: Server, door: ResourceDoor, caller: Caller): void {
  const { scope } = caller;
  server.setRequestHandler('resources/list', () => {
    const collections = listed(door, scope);
    const resources: Resource[] = collections.map(({ db, collection }) => ({
      uri: collectionUri(db, collection),
      name: `${db}/${collection}`,
      title: `The ${collection} collection of ${db}`,
      description: `The documents of ${db}/${collection} you may read, as GET ${collectionUri(db, collection)} answers them; read one with ${collectionUri(db, collection)}/{id}`,
      mimeType: MIME,
    }));
    return { resources, ...cacheHint(collections.length === 0 ? 0 : Math.min(...collections.map((c) => door.ttlFor(exchangeOf(scope, c.path))))) };
  });
  server.setRequestHandler('resources/templates/list', () => {
    const collections = listed(door, scope);
    const templates: ResourceTemplateType[] = collections.flatMap(({ db, collection }) => [
      { uriTemplate: `${collectionUri(db, collection)}/{id}`, name: `${db}/${collection} document`, description: `One document of ${db}/${collection}, by its _id (${ID_HINT})`, mimeType: MIME },
      {
        uriTemplate: `${collectionUri(db, collection)}${QUERY_TEMPLATE}`,
        name: `${db}/${collection} query`,
        description: `Documents of ${db}/${collection}: filter and sort are JSON objects (MongoDB query and sort), pagesize 1 to 1000, page from 1`,
        mimeType: MIME,
      },
    ]);
    // Conditions that are not a literal collection expose what the general templates address.
    if (door.conditions.some(({ text }) => literalCollection(text, door.collectionPath) === null)) {
      templates.push(
        { uriTemplate: `${SCHEME}{db}/{collection}/{id}`, name: 'document', description: `One document, by its _id, of a collection this service exposes (${ID_HINT})`, mimeType: MIME },
        { uriTemplate: `${SCHEME}{db}/{collection}${QUERY_TEMPLATE}`, name: 'query', description: 'Documents of a collection this service exposes', mimeType: MIME },
      );
    }
    return { resourceTemplates: templates, ...cacheHint(0) };
  });
  server.setRequestHandler('resources/read', async (req) => {
    const parsed = parseResourceUri(req.params.uri, door.collectionPath);
    if (!parsed.ok) throw new ProtocolError(ProtocolErrorCode.InvalidParams, parsed.problem);
    const { target } = parsed;
    if (!exposed(door, scope, target.pathOnly))
      throw new ProtocolError(ProtocolErrorCode.ResourceNotFound, `${target.uri} is not a resource of this service (mcp.resources does not expose ${target.pathOnly})`);
    return caller.budget.serial(() => readThroughRest(door, caller, target));
  });
}

/** How an `_id` that is not a string is named (resource-uris.ts). */
const ID_HINT = 'a number _id as {id}?id_type=NUMBER, e.g. 42?id_type=NUMBER; a string of 24 hex digits with ?id_type=STRING';

function cacheHint(ttlMs: number): { ttlMs: number; cacheScope: 'private' } {
  return { ttlMs, cacheScope: 'private' };
}

/** `GET <restPath>` to this server as the agent; the body as the resource's text, charged to the answer's budget. */
async function readThroughRest(door: ResourceDoor, caller: Caller, target: ResourceTarget): Promise<ReadResourceResult> {
  const { scope, signal, budget } = caller;
  const deadline = AbortSignal.timeout(door.timeoutMs);
  let status: number;
  let text: string | null;
  try {
    const response = await request(`${selfOrigin(scope)}${target.restPath}`, {
      method: 'GET',
      headers: innerHeaders(scope, 'resource'),
      signal: AbortSignal.any([signal, deadline]),
      dispatcher: door.dispatcher,
    });
    status = response.statusCode;
    text = await readUpTo(response.body, budget.left);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new ProtocolError(ProtocolErrorCode.InternalError, `${target.uri}: the read did not complete: ${deadline.aborted ? `no answer within ${door.timeoutMs} ms` : (error as Error).message}`);
  }
  if (status === 404) throw new ProtocolError(ProtocolErrorCode.ResourceNotFound, `${target.uri}: not found (GET ${target.pathOnly} answered 404)`);
  if (status < 200 || status >= 300) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${target.uri} may not be read: GET ${target.pathOnly} answered ${status}${refusalOf(text)}`);
  if (text === null || !budget.take(jsonStringBytes(text) + target.uri.length + 64, target.uri))
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `${target.uri} was not sent: it is larger than what is left of this request's answer bound (mcp.maxResponseBytes, ${budget.limit} bytes); ask for a smaller page`,
    );
  return { contents: [{ uri: target.uri, mimeType: MIME, text }], ...cacheHint(door.ttlFor(exchangeOf(scope, target.restPath))) };
}

/** The message of a refusal in the error format (`{"message": …}`), never anything else of its body. */
function refusalOf(text: string | null): string {
  if (text === null || text.length > 4096) return '';
  try {
    const body = JSON.parse(text) as { message?: unknown };
    return typeof body.message === 'string' ? `: ${body.message.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}
