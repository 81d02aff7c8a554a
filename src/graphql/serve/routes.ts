/**
 * The two routes of the GraphQL feature:
 * - `<routes.graphql>/<uri>` serves an app (SPEC §6.3), in this order: find the app by the whole
 *   rest of the path (404 for an unknown or disabled one and for a longer path, before the ACL, as
 *   RESTHeart answers); the ACL on the request path
 *   (admin roles or an allowing permission; 401/403); the body, read up to 1 MiB (413 beyond);
 *   then the engine's GraphQL-over-HTTP handler, whose answer is written as is. Every refusal on
 *   the way (and 401/429/503 of the stages before) is GraphQL-shaped (refusal.ts, SPEC §15).
 * - `<graphql.appsPath>` stores the app documents (SPEC §6.1): the shared document CRUD, behind
 *   the same "admin roles or an allowing permission" rule, with the 409 on a uri another app serves.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AppContext } from '../../app-context.js';
import { notFound, OutriggerError } from '../../errors.js';
import { afterAnswerOf, followedBy, type AfterAnswer, type OuterAnswer } from '../../http/after-answer.js';
import { readBody } from '../../http/body.js';
import { createDocumentRoutes } from '../../http/document-routes.js';
import type { OwnRoute } from '../../http/route-table.js';
import type { RequestScope } from '../../http/scope.js';
import type { DocumentStore } from '../../store/document-store.js';
import { syncDeclaredAggregations } from '../reads/aggregations/sync.js';
import { appValidator, toolNameCollision, uriCollision, warningsOf, type StoredApp } from '../document/setup-kind.js';
import { backendHeadersFor } from '../backend/caller-identity.js';
import { handleGraphqlHttp, type GraphqlHttpInput, type GraphqlHttpResponse } from './http-handler.js';
import { GraphqlAnswers } from './answer-cache.js';
import { claimMutation, mayClaim, REPLAYED_HEADER, settleMutation, type MutationClaim, type MutationIdempotency } from './idempotent-mutation.js';
import type { IdempotencyTicket } from '../../idempotency/store.js';
import { keyRequiredWhere } from '../../idempotency/required.js';
import type { PersistedQueries } from './persisted-queries.js';
import { PersistedQueryStore } from './persisted-query-store.js';
import { graphqlRefusal } from './refusal.js';
import { isSubscriptionRequest, streamChoice } from './transport.js';
import type { GraphqlAppRegistry } from '../compile/registry.js';
import type { CompiledApp } from '../compile/compile-app.js';
import { graphiqlAside, isGraphiqlAsset, redirectToGraphiql, sendGraphiqlExample, serveGraphiql, wantsGraphiql } from '../ui/graphiql-route.js';
import { MAX_BODY_BYTES, type CallerFacts, type RequestContext } from '../types.js';
import { RequestAbort } from '../../util/request-abort.js';
import { logAdminChange } from '../../admin/admin-audit.js';
import { identityFacts } from '../../principal/access-facts.js';
import { higherPriority, priorityRank } from '../../principal/priority.js';

/** Serves a subscription over SSE (subscribe/sse.ts) to its end; the request is authenticated and allowed. */
export type ServeSse = (scope: RequestScope, app: CompiledApp, appPath: string, body: Buffer | undefined) => Promise<void>;

export function createGraphqlRoute(context: AppContext, registry: GraphqlAppRegistry, serveSse?: ServeSse, outerAnswer?: () => OuterAnswer | undefined): OwnRoute {
  const { config, acl } = context;
  const prefix = config.routes.graphql;
  const serviceAuth = config.graphql.backend.auth === 'service';
  // SPEC §15: Apollo's automatic persisted queries, per app in Redis, shared by every replica.
  const persistedQueries: PersistedQueries = {
    store: new PersistedQueryStore(context.redis, context.keys),
    onError: (error, what) => context.logger.warn({ err: String(error) }, `error while ${what}`),
  };
  // SPEC §12: whole answers of apps whose descriptor says `cache`, in the proxy's cache when GraphQL reads the upstream (as its reads do, module.ts).
  const sameOrigin = new URL(config.graphql.backend.url).origin === new URL(config.upstream.url).origin;
  const answers = context.responseCache && sameOrigin ? new GraphqlAnswers(context.responseCache) : undefined;
  // SPEC §14: keyed mutations, claimed in the idempotency store every replica shares.
  const idempotency: MutationIdempotency | undefined = context.idempotency ? { store: context.idempotency, persistedQueries, required: keyRequiredWhere(config.idempotency.required) } : undefined;

  return {
    kind: 'graphql',
    prefix,
    // SPEC §15: refusals on this route in GraphQL's shape; `restheart` keeps RESTHeart's.
    ...(config.graphql.httpProfile === 'restheart' ? {} : { errorFormat: graphqlRefusal }),
    async handle(scope: RequestScope): Promise<void> {
      const rest = scope.path.slice(prefix.length);
      // 1. The app; unknown and disabled answer alike, so a caller learns nothing about disabled apps.
      const found = rest.length > 1 ? registry.lookup(rest) : ({ found: false, reason: 'unknown' } as const);
      // An app answers on its own path only (app-document.ts appUriOf, issue 53): the path every decision saw.
      if (!found.found) throw notFound(`no GraphQL app is served at ${scope.path}; an app answers only at ${prefix}/<its uri>, and the apps are listed at ${config.graphql.appsPath}`, 'APP_NOT_FOUND');

      // GraphiQL's page and assets for a browser: public code, before the ACL (SPEC §15, ui/graphiql-route.ts).
      if (serveGraphiqlPage(context, scope, found.app, `${prefix}/${found.app.uri}`)) return;

      // 2. The ACL (a permission that looks at the body needs it read first).
      const readsBody = scope.method === 'POST';
      if (readsBody && acl.needsRequestBody(scope.principal)) scope.bufferedBody = await readBody(scope, MAX_BODY_BYTES);
      context.authorizeOwnRoute(scope);

      // The page's example operation (it shows part of the schema) and the Basic sign-in, behind the ACL.
      const aside = graphiqlAside(scope.method, scope.query);
      if (aside === 'example') return sendGraphiqlExample(scope.res, found.app.example);
      if (aside === 'sign-in') return redirectToGraphiql(scope.res, `${prefix}/${found.app.uri}`);

      // GraphQL over SSE (SPEC §6.5): subscriptions, streamed until they end; Accept and the operation decide (transport.ts).
      const choice = serveSse && (scope.method === 'GET' || scope.method === 'POST') ? streamChoice(scope.req.headers.accept) : 'json';
      if (serveSse && choice !== 'json') {
        const body = scope.method === 'POST' ? (scope.bufferedBody ?? (await readBody(scope, MAX_BODY_BYTES))) : undefined;
        if (choice === 'sse' || isSubscriptionRequest({ method: scope.method, headers: scope.req.headers, query: scope.query, body }, found.app)) {
          await serveSse(scope, found.app, rest, body);
          return;
        }
        scope.bufferedBody = body; // a query or mutation: answered as JSON below, from the body already read
      }

      // 3. The body, capped: past 1 MiB the request is refused without buffering the rest.
      const body = readsBody ? (scope.bufferedBody ?? (await readBody(scope, MAX_BODY_BYTES))) : undefined;

      // 4. The engine, once a keyed mutation is claimed (SPEC §14): a replay is its record, and runs nothing.
      const input: GraphqlHttpInput = { method: scope.method, headers: scope.req.headers, query: scope.query, body: body && body.length > 0 ? body : undefined };
      const claim = idempotency && mayClaim(idempotency, scope) ? await claimMutation(idempotency, scope, found.app, input) : undefined;
      if (claim?.kind === 'replay') return answerReplay(scope, claim);
      const outer = outerAnswer?.()?.(scope.req);
      const out = await runEngine(context, scope, found.app, input, {
        persistedQueries,
        serviceAuth,
        ...(answers ? { answers } : {}),
        ...(claim ? { ticket: claim.ticket } : {}),
        ...(outer ? { outer } : {}),
      });
      if (out === undefined) return; // the client left; nobody to answer
      writeAnswer(scope, out);
    },
  };
}

interface EngineRun {
  readonly persistedQueries: PersistedQueries;
  readonly serviceAuth: boolean;
  readonly answers?: GraphqlAnswers;
  /** A keyed mutation's claim: settled (recorded or released) before the answer is written, so a retry after it finds the record. */
  readonly ticket?: IdempotencyTicket;
  /** An MCP tool call's inner request: the agent's `/mcp` answer, which its changes also wait for. */
  readonly outer?: AfterAnswer;
}

/** The engine's answer to the request, aborted if the client goes away (undefined then: nobody to answer). */
async function runEngine(context: AppContext, scope: RequestScope, app: CompiledApp, input: GraphqlHttpInput, run: EngineRun): Promise<GraphqlHttpResponse | undefined> {
  const { req, res, principal } = scope;
  // One controller for the execution: the client leaving aborts it, and so does its time limit.
  const controller = new RequestAbort();
  let clientLeft = false;
  const onClose = () => {
    if (res.writableFinished) return;
    clientLeft = true;
    controller.abort();
  };
  res.once('close', onClose);
  const caller: CallerFacts = { principal, headers: req.headers, clientIp: scope.clientIp, secure: scope.secure };
  const ctx: RequestContext = {
    principal: identityFacts(principal),
    backendHeaders: run.serviceAuth ? {} : backendHeadersFor(context.planIdentity(principal), principal, req.headers),
    signal: controller,
    requestId: scope.id,
    caller,
    // SPEC §9: backend reads and writes carry the request's trace.
    trace: scope.trace,
    // SPEC §13: its backend calls wait in the pass-through's line in the class of its key and rate-limit policies.
    priority: priorityRank(higherPriority(principal.priority, scope.ratePriority)),
    // SPEC §10: a policy with `units: cost` covered the request; its estimate is charged once known.
    ...(scope.rateLimits && context.limits ? { chargeCost: (documents: number) => context.limits!.chargeCost(scope, documents) } : {}),
    // SPEC §6.5: a mutation's changes are published once its answer left (issue 53 item 7), and
    // for an MCP tool call once the agent's own answer left too (SPEC §11.1).
    afterAnswer: followedBy(afterAnswerOf(res), run.outer),
  };
  let out: GraphqlHttpResponse | undefined;
  try {
    out = await handleGraphqlHttp(input, app, ctx, { persistedQueries: run.persistedQueries, ...(run.answers ? { answers: run.answers } : {}) });
  } finally {
    res.off('close', onClose);
    if (run.ticket) await settleMutation(run.ticket, out, clientLeft || res.destroyed).catch((error) => context.logger.warn({ err: String(error) }, 'error while settling an idempotency record'));
  }
  if (out.backendReads) context.metrics.graphqlBackendReads.inc({}, out.backendReads);
  return clientLeft || res.destroyed ? undefined : out;
}

function writeAnswer(scope: RequestScope, out: { status: number; headers: Record<string, string>; body: string | Buffer }, extra: Record<string, string> = {}): void {
  scope.res.writeHead(out.status, { ...out.headers, ...extra, 'content-length': Buffer.byteLength(out.body) });
  scope.res.end(out.body);
}

/** A finished keyed mutation's recorded answer, marked as a replay (claimMutation told its observers nothing). */
function answerReplay(scope: RequestScope, replay: Extract<MutationClaim, { kind: 'replay' }>): void {
  writeAnswer(scope, replay, { [REPLAYED_HEADER]: 'true' });
}

/**
 * GraphiQL's page or asset when the request asks for one (true when answered). The page opens on
 * the app's example when the ACL allows the request; otherwise it asks for a key (graphiql-page.mjs).
 */
function serveGraphiqlPage(context: AppContext, scope: RequestScope, app: CompiledApp, endpoint: string): boolean {
  if (!wantsGraphiql(scope.method, typeof scope.req.headers.accept === 'string' ? scope.req.headers.accept : undefined, scope.query)) return false;
  const ifNoneMatch = scope.req.headers['if-none-match'];
  const allowed = !isGraphiqlAsset(scope.query) && allows(context, scope);
  if (serveGraphiql(scope.res, endpoint, scope.query, typeof ifNoneMatch === 'string' ? ifNoneMatch : undefined, allowed ? app.example : undefined)) return true;
  throw notFound(`GraphiQL is not available here (its assets were not built, or no such asset); run npm run build`, 'GRAPHIQL_NOT_BUILT');
}

/** The ACL's verdict on a GET without throwing its 401/403 (anything else is still thrown). */
function allows(context: AppContext, scope: RequestScope): boolean {
  try {
    context.authorizeOwnRoute(scope);
    return true;
  } catch (error) {
    if (error instanceof OutriggerError && (error.status === 401 || error.status === 403)) return false;
    throw error;
  }
}

export function createAppsRoute(context: AppContext, store: DocumentStore<StoredApp>): OwnRoute {
  const { config } = context;
  const validate = appValidator(config);
  // The request being served, for the identity the aggregation metadata write runs as.
  const writer = new AsyncLocalStorage<RequestScope>();
  const backend = config.graphql.backend;
  const serviceHeaders: Record<string, string> = backend.serviceAuthorization ? { authorization: backend.serviceAuthorization } : {};
  const documents = createDocumentRoutes<StoredApp>({
    store,
    noun: 'GraphQL app',
    validate: (candidate) => validate(candidate),
    async checkAgainstOthers(doc) {
      const stored = await store.fetchAll();
      const collision = uriCollision(stored, doc, config.routes.graphql) ?? toolNameCollision(stored, doc);
      if (collision) throw collision;
      const scope = writer.getStore();
      if (config.graphql.aggregations && scope) {
        const headers = backend.auth === 'service' ? serviceHeaders : backendHeadersFor(context.planIdentity(scope.principal), scope.principal, scope.req.headers);
        await syncDeclaredAggregations(doc, { baseUrl: backend.url, collectionPath: backend.collectionPath, defaultDb: config.graphql.defaultDb, headers });
      }
    },
    // A write answers the document with the warnings its validation gave (SPEC §6.2: $typeResolver
    // overlaps and the type that wins each); reads answer the document as stored.
    present: (doc, scope) => {
      const warnings = scope.method === 'GET' ? [] : warningsOf(doc);
      return warnings.length > 0 ? { ...doc, warnings } : doc;
    },
    matchesSearch: (doc, term) => doc._id.toLowerCase().includes(term) || doc.descriptor.uri.toLowerCase().includes(term) || (doc.descriptor.name ?? '').toLowerCase().includes(term),
  });
  const prefix = config.graphql.appsPath;
  return {
    kind: 'graphql-apps',
    prefix,
    async handle(scope) {
      context.authorizeOwnRoute(scope);
      await writer.run(scope, () => documents(scope, scope.path.slice(prefix.length)));
      logAdminChange(context.logger, scope);
    },
  };
}
