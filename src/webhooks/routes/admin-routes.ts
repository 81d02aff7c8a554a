/**
 * `/_admin/webhooks/...` (SPEC §7.1): the document CRUD of `http/document-routes.ts`, with the
 * webhook-specific sub-routes in front of it: `test`, `recording` and `<id>/logs`. The admin
 * route has already authorized the caller (admin roles or an allowing permission); test sends
 * additionally require admin roles, and the signing secret is shown to admins only.
 */
import type { Principal } from '../../principal/principal.js';
import type { SubRouteHandler } from '../../admin/admin-route.js';
import { badRequest, methodNotAllowed, notFound } from '../../errors.js';
import { readJsonBody } from '../../http/body.js';
import { isJsonObject } from '../../util/objects.js';
import { createDocumentRoutes } from '../../http/document-routes.js';
import { decodePathSegment } from '../../input-limits/path-id.js';
import { readPaging } from '../../http/paging.js';
import { sendJson, sendNoContent } from '../../http/respond.js';
import type { DocumentStore } from '../../store/document-store.js';
import { LOG_STATUSES, type LogStatus } from '../log-entry.js';
import { MAX_MERGED_DEPTH, type WebhookLogStore } from '../logs/log-store.js';
import type { Recording } from '../capture/recording.js';
import type { Redelivery } from './redelivery.js';
import { handleTestSend, type TestSendDeps } from './test-send.js';
import { matchesWebhookSearch, withoutSecret } from '../documents/index.js';
import type { WebhookDocument, WebhookValidation } from '../webhook.js';

export interface WebhookRoutesDeps extends Omit<TestSendDeps, 'fetch'> {
  store: DocumentStore<WebhookDocument>;
  logs: WebhookLogStore;
  recording: Recording;
  redelivery: Redelivery;
  isAdmin(principal: Principal): boolean;
  validate(candidate: Record<string, unknown>, existing: WebhookDocument | undefined): Promise<WebhookValidation>;
}

const ID_PATTERN = /^[A-Za-z0-9._~:@-]{1,128}$/;

export function createWebhookRoutes(deps: WebhookRoutesDeps): SubRouteHandler {
  const documents = createDocumentRoutes<WebhookDocument>({
    store: deps.store,
    noun: 'webhook',
    validate: (candidate, existing) => deps.validate(candidate, existing),
    present: (doc, scope) => (deps.isAdmin(scope.principal) || doc.type !== 'http' ? doc : withoutSecret(doc)),
    matchesSearch: matchesWebhookSearch,
  });
  const testDeps: TestSendDeps = { ...deps, fetch: (id) => deps.store.fetch(id) };

  return async function handleWebhooks(scope, subPath) {
    const path = subPath.length > 1 && subPath.endsWith('/') ? subPath.slice(0, -1) : subPath;
    const { method, res } = scope;

    if (path === '/test') {
      if (method !== 'POST') throw methodNotAllowed(['POST']);
      return handleTestSend(testDeps, scope);
    }

    if (path === '/recording') {
      if (method === 'POST') return sendJson(res, 201, await deps.recording.begin());
      if (method === 'GET') {
        const view = await deps.recording.read(readPaging(scope.query));
        return sendJson(res, 200, view, { 'x-total-count': view.total });
      }
      if (method === 'DELETE') {
        await deps.recording.end();
        return sendNoContent(res);
      }
      throw methodNotAllowed(['GET', 'POST', 'DELETE']);
    }

    const resend = /^\/([^/]+)\/logs\/([^/]+)\/resend$/.exec(path);
    if (resend) {
      if (method !== 'POST') throw methodNotAllowed(['POST']);
      const id = decodePathSegment(resend[1]!, 'webhook id');
      if (!ID_PATTERN.test(id)) throw notFound(`no webhook with _id ${JSON.stringify(id)}`);
      const queued = await deps.redelivery.resend(id, decodePathSegment(resend[2]!, 'log entry id'));
      return sendJson(res, 202, { webhookId: id, ...queued, queued: true });
    }

    const recover = /^\/([^/]+)\/recover$/.exec(path);
    if (recover) {
      if (method !== 'POST') throw methodNotAllowed(['POST']);
      const id = decodePathSegment(recover[1]!, 'webhook id');
      if (!ID_PATTERN.test(id)) throw notFound(`no webhook with _id ${JSON.stringify(id)}`);
      const body = await readJsonBody(scope);
      if (!isJsonObject(body) || typeof body.since !== 'string') throw badRequest('the body must be {"since": "<ISO 8601 date>"}, e.g. {"since": "2026-01-31T00:00:00Z"}');
      const extra = Object.keys(body).find((k) => k !== 'since');
      if (extra) throw badRequest(`${extra} is not a recover field (only since)`);
      const since = Date.parse(body.since);
      if (Number.isNaN(since)) throw badRequest(`since must be an ISO 8601 date such as 2026-01-31T00:00:00Z (got ${JSON.stringify(body.since)})`);
      return sendJson(res, 202, { webhookId: id, since: new Date(since).toISOString(), ...(await deps.redelivery.recover(id, since)) });
    }

    const logs = /^\/([^/]+)\/logs$/.exec(path);
    if (logs) {
      const id = decodePathSegment(logs[1]!, 'webhook _id');
      if (!ID_PATTERN.test(id)) throw notFound(`no webhook with _id ${JSON.stringify(id)}`);
      if (method === 'GET') {
        const statuses = readStatuses(scope.query.get('status'));
        const paging = readPaging(scope.query);
        if (statuses.length > 1 && paging.page * paging.pagesize > MAX_MERGED_DEPTH)
          throw badRequest(`page × pagesize may be at most ${MAX_MERGED_DEPTH} when status names more than one status; filter on one status to read further back`);
        if (!(await deps.store.fetch(id)) && !(await deps.logs.any(id))) throw notFound(`no webhook with _id ${JSON.stringify(id)}`);
        const { total, entries } = await deps.logs.list(id, { statuses, ...paging });
        return sendJson(res, 200, entries, { 'x-total-count': total });
      }
      if (method === 'DELETE') {
        const beforeText = scope.query.get('before');
        let before: number | undefined;
        if (beforeText !== null && beforeText !== '') {
          before = Date.parse(beforeText);
          if (Number.isNaN(before)) throw badRequest(`before must be an ISO 8601 date such as 2026-01-31T00:00:00Z (got ${JSON.stringify(beforeText)})`);
        }
        await deps.logs.clear(id, before);
        return sendNoContent(res);
      }
      throw methodNotAllowed(['GET', 'DELETE']);
    }

    return documents(scope, subPath);
  };
}

/** `?status=`: one status or several, comma-separated (`success,failed`: the console's default view); empty or absent: all. */
function readStatuses(text: string | null): LogStatus[] {
  if (text === null || text === '') return [];
  const statuses = text.split(',').map((s) => s.trim());
  for (const s of statuses) {
    if (!LOG_STATUSES.includes(s as LogStatus)) throw badRequest(`status must be one of ${LOG_STATUSES.join(', ')}, or several of them comma-separated (got ${JSON.stringify(text)})`);
  }
  return statuses as LogStatus[];
}
