/**
 * Held event streams that tell an agent of changes (SPEC §11.1), built beside the SDK, not with its
 * `createMcpHandler` listen router: that router keeps one in-process bus for all streams with no
 * notion of who listens, so it cannot tell only the affected callers, and bounds the process only
 * (no per-principal bound, no bound on a stream nobody reads).
 *
 * Two doors, one kind of stream:
 * - 2026-07-28 `subscriptions/listen`: `toolsListChanged`, `resourcesListChanged` and
 *   `resourceSubscriptions` (URIs), acknowledged with what is honored, each notification stamped
 *   with the listen's id;
 * - 2025-11-25 `resources/subscribe {uri}`: answered `{}` on the POST's own event stream, which
 *   stays open and carries that URI's `notifications/resources/updated` and both list-changed
 *   notifications (a 2025 client has no other stream: `GET` is 405); closing it unsubscribes, as
 *   does `resources/unsubscribe` of the same URI by the same caller.
 *
 * A change of the app store or of the permissions (each replica hears both through the change
 * bus) recomputes each listener's tool and resource lists as `tools/list` and `resources/list`
 * would answer them, and tells those whose list changed. Per-URI updates come from the change
 * feed (uri-updates.ts). Bounds: `subscriptions.maxPerPrincipal` streams of one principal and
 * `subscriptions.maxPerProcess` of the replica (refused -32603 naming it), MAX_URIS_PER_LISTENER
 * URIs a stream, a stream with more than MAX_UNSENT_BYTES its client has not read is closed, and
 * every second each stream's credentials are checked again: a revoked or expired key (or one
 * that now names another caller) closes it.
 */
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { Principal } from '../../principal/principal.js';
import type { RequestScope } from '../../http/scope.js';
import { isJsonObject } from '../../util/objects.js';
import { OutriggerError } from '../../errors.js';
import { MAX_URIS_PER_LISTENER, type UriUpdates, type WatchedUri } from './uri-updates.js';

/** What a stream may hold unread by its client before it is closed (notifications are ~150 bytes each). */
export const MAX_UNSENT_BYTES = 64 * 1024;
const KEEP_ALIVE_MS = 15_000;
/** How often each stream's credentials are checked again (SPEC §6.5's 1 s goal, as subscriptions'). */
export const RECHECK_MS = 1000;

export interface ListenBounds {
  readonly maxPerPrincipal: number;
  readonly maxPerProcess: number;
}

/** A caller's current lists, as strings compared before and after a change. */
export interface ListSignatures {
  tools(scope: RequestScope): string;
  resources(scope: RequestScope): string | null;
}

export interface ListenParts {
  readonly bounds: ListenBounds;
  readonly lists: ListSignatures;
  readonly offersResources: boolean;
  /** Per-URI updates (null without `mcp.resources`: URIs are then left out of the acknowledgement). */
  readonly updates?: UriUpdates | null;
  /** The proxy's authenticator, for the check every second (absent: never checked again). */
  readonly authenticate?: () => ((scope: RequestScope) => Promise<Principal> | Principal) | undefined;
}

interface Listener {
  readonly scope: RequestScope;
  readonly principal: string;
  /** 2025-11-25 `resources/subscribe` streams: their URIs, for `resources/unsubscribe`. */
  readonly legacyUris: readonly string[] | null;
  readonly tools: boolean;
  readonly resources: boolean;
  lastTools: string;
  lastResources: string | null;
  send(method: string, params?: Record<string, unknown>): void;
  close(): void;
}

type Id = string | number;

export class Listeners {
  private readonly open = new Set<Listener>();
  private readonly perPrincipal = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly parts: ListenParts) {}

  get size(): number {
    return this.open.size;
  }

  /** Answers one 2026-07-28 `subscriptions/listen` POST: a refusal, or the stream held open until the client leaves. */
  async serve(scope: RequestScope, message: Record<string, unknown>): Promise<void> {
    const id = idOf(message);
    const params = isJsonObject(message.params) ? message.params : {};
    const filter = isJsonObject(params.notifications) ? params.notifications : null;
    if (id === null || filter === null) return refuse(scope, 400, -32602, 'subscriptions/listen needs an id and params.notifications (what to be told of)', id);
    const honored: Record<string, unknown> = {};
    if (filter.toolsListChanged === true) honored.toolsListChanged = true;
    if (filter.resourcesListChanged === true && this.parts.offersResources) honored.resourcesListChanged = true;
    let uris: WatchedUri[] = [];
    if (filter.resourceSubscriptions !== undefined && this.parts.updates) {
      const checked = this.checkUris(scope, filter.resourceSubscriptions);
      if (typeof checked === 'string') return refuse(scope, 400, -32602, `subscriptions/listen refused: ${checked}`, id);
      uris = checked;
      if (uris.length > 0) honored.resourceSubscriptions = uris.map((u) => u.uri);
    }
    const stamp = (p: Record<string, unknown>) => ({ ...p, _meta: { [SUBSCRIPTION_ID_META_KEY]: id } });
    await this.start(scope, id, uris, {
      what: 'subscriptions/listen',
      legacyUris: null,
      tools: honored.toolsListChanged === true,
      resources: honored.resourcesListChanged === true,
      first: { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: stamp({ notifications: honored }) },
      empty: Object.keys(honored).length === 0 ? { jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: id } } } : null,
      stamp,
    });
  }

  /** A 2025-era `resources/subscribe` or `resources/unsubscribe`, answered here (true); anything else is the SDK's (false). */
  async serveLegacy(scope: RequestScope, message: unknown): Promise<boolean> {
    if (!isJsonObject(message)) return false;
    if (message.method === 'resources/subscribe') await this.subscribe(scope, message);
    else if (message.method === 'resources/unsubscribe') this.unsubscribe(scope, message);
    else return false;
    return true;
  }

  /** Answers one 2025-11-25 `resources/subscribe {uri}` POST: `{}` on an event stream that stays open. */
  async subscribe(scope: RequestScope, message: Record<string, unknown>): Promise<void> {
    const id = idOf(message);
    const params = isJsonObject(message.params) ? message.params : {};
    if (id === null) return refuse(scope, 400, -32600, 'resources/subscribe is a request: it needs an id', id);
    // A request's error is a JSON-RPC answer (200), as the SDK's 2025 transport answers a handler's.
    if (!this.parts.updates) return refuse(scope, 200, -32601, 'this server offers no resources to subscribe to (mcp.resources names none)', id);
    const checked = this.checkUris(scope, [params.uri]);
    if (typeof checked === 'string') return refuse(scope, 200, -32602, `resources/subscribe refused: ${checked}`, id);
    await this.start(scope, id, checked, {
      what: 'resources/subscribe',
      legacyUris: checked.map((u) => u.uri),
      tools: true,
      resources: this.parts.offersResources,
      first: { jsonrpc: '2.0', id, result: {} },
      empty: null,
      stamp: (p) => p,
    });
  }

  /** 2025-11-25 `resources/unsubscribe {uri}`: closes the caller's subscribe streams of that URI. Always `{}`. */
  unsubscribe(scope: RequestScope, message: Record<string, unknown>): void {
    const params = isJsonObject(message.params) ? message.params : {};
    const principal = principalOf(scope);
    for (const l of [...this.open]) if (l.principal === principal && l.legacyUris?.includes(String(params.uri))) l.close();
    const body = JSON.stringify({ jsonrpc: '2.0', id: idOf(message), result: {} });
    scope.res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' });
    scope.res.end(body);
  }

  /** The URIs of a listen or subscribe, each checked; a sentence naming the first refused one. */
  private checkUris(scope: RequestScope, list: unknown): WatchedUri[] | string {
    if (!Array.isArray(list)) return 'resourceSubscriptions must be an array of resource URIs';
    if (list.length > MAX_URIS_PER_LISTENER) return `${list.length} resource URIs; one stream may watch at most ${MAX_URIS_PER_LISTENER}`;
    const out: WatchedUri[] = [];
    for (const uri of list) {
      const checked = this.parts.updates!.check(scope, uri);
      if (!checked.ok) return checked.problem;
      if (!out.some((u) => u.uri === checked.watched.uri)) out.push(checked.watched);
    }
    return out;
  }

  /** Bounds, then the stream: counted at once, its URIs claimed, then its first message; held until the client leaves. */
  private async start(scope: RequestScope, id: Id, uris: readonly WatchedUri[], o: StreamStart): Promise<void> {
    const principal = principalOf(scope);
    const held = this.perPrincipal.get(principal) ?? 0;
    if (held >= this.parts.bounds.maxPerPrincipal)
      return refuse(scope, 429, -32603, `${o.what} refused: you hold ${held} open streams, the most one caller may (subscriptions.maxPerPrincipal); close one first`, id);
    if (this.open.size >= this.parts.bounds.maxPerProcess)
      return refuse(scope, 503, -32603, `${o.what} refused: this server holds its most open streams (subscriptions.maxPerProcess, ${this.parts.bounds.maxPerProcess})`, id);
    const { res } = scope;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' });
    const frame = (payload: unknown) => `event: message\ndata: ${JSON.stringify(payload)}\n\n`;
    if (o.empty) return void res.end(frame(o.first) + frame(o.empty));
    let stop: (() => void) | null = null;
    const keepAlive = setInterval(() => send(': keepalive\n\n'), KEEP_ALIVE_MS);
    keepAlive.unref();
    const listener: Listener = {
      scope,
      principal,
      legacyUris: o.legacyUris,
      tools: o.tools,
      resources: o.resources,
      lastTools: this.parts.lists.tools(scope),
      lastResources: this.parts.lists.resources(scope),
      send: (method, params = {}) => send(frame({ jsonrpc: '2.0', method, params: o.stamp(params) })),
      close: () => {
        if (!this.open.delete(listener)) return;
        clearInterval(keepAlive);
        stop?.();
        const left = (this.perPrincipal.get(principal) ?? 1) - 1;
        if (left > 0) this.perPrincipal.set(principal, left);
        else this.perPrincipal.delete(principal);
        if (this.open.size === 0) this.stopChecking();
        if (!res.destroyed) res.end();
      },
    };
    // A client that does not read: what it left unread passes the bound, and the stream is closed.
    const send = (text: string) => {
      if (res.destroyed || res.writableEnded) return listener.close();
      res.write(text);
      if (res.writableLength > MAX_UNSENT_BYTES) {
        listener.close();
        res.destroy();
      }
    };
    this.open.add(listener);
    this.perPrincipal.set(principal, held + 1);
    this.startChecking();
    res.once('close', () => listener.close());
    if (uris.length > 0) {
      try {
        const release = await this.parts.updates!.add(scope, uris, (uri) => listener.send('notifications/resources/updated', { uri }));
        if (!this.open.has(listener)) return release();
        stop = release;
      } catch {
        send(frame({ jsonrpc: '2.0', id, error: { code: -32603, message: "the resources could not be watched: Outrigger's store (Redis) failed; retry shortly" } }));
        return listener.close();
      }
    }
    send(frame(o.first));
  }

  /** The apps or the permissions changed: each listener whose own list changed is told. */
  notify(): void {
    for (const listener of this.open) {
      if (listener.tools) {
        const now = this.parts.lists.tools(listener.scope);
        if (now !== listener.lastTools) listener.send('notifications/tools/list_changed');
        listener.lastTools = now;
      }
      if (listener.resources) {
        const now = this.parts.lists.resources(listener.scope);
        if (now !== listener.lastResources) listener.send('notifications/resources/list_changed');
        listener.lastResources = now;
      }
    }
  }

  closeAll(): void {
    this.stopChecking();
    for (const listener of [...this.open]) listener.close();
  }

  private startChecking(): void {
    if (this.timer || !this.parts.authenticate) return;
    this.timer = setInterval(() => void this.recheck(), RECHECK_MS);
    this.timer.unref();
  }

  private stopChecking(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Every second: each stream's credentials authenticated again (one check per credentials a round); a stream whose key no longer does is closed. */
  private async recheck(): Promise<void> {
    const authenticate = this.parts.authenticate?.();
    if (this.checking || !authenticate) return;
    this.checking = true;
    const round = new Map<string, Promise<Principal | null | undefined>>();
    try {
      for (const listener of [...this.open]) {
        const { scope } = listener;
        const key = `${scope.req.headers.authorization ?? ''}\u0000${scope.clientIp}`;
        let answer = round.get(key);
        if (!answer)
          round.set(
            key,
            (answer = Promise.resolve()
              .then(() => authenticate(scope))
              .then((p) => p, refusedOrBusy)),
          );
        const principal = await answer;
        // Busy (a 503 or 429 of the password check, Redis away): the stream stays, checked again next round.
        if (principal === undefined) continue;
        const before = scope.principal;
        if (principal === null || principal.via === 'anonymous' || principal.id !== before.id || (principal.keyId ?? null) !== (before.keyId ?? null)) listener.close();
        else scope.principal = principal;
      }
    } finally {
      this.checking = false;
    }
  }
}

interface StreamStart {
  readonly what: string;
  readonly legacyUris: readonly string[] | null;
  readonly tools: boolean;
  readonly resources: boolean;
  /** The acknowledgement (2026-07-28) or the result (2025-11-25), sent once the URIs are watched. */
  readonly first: unknown;
  /** A listen that asked for nothing honored: its acknowledgement and the result that ends it. */
  readonly empty: unknown;
  readonly stamp: (params: Record<string, unknown>) => Record<string, unknown>;
}

/** A refused authentication (401, 403: the credentials no longer authenticate) is null; any other failure is undefined (try again). */
function refusedOrBusy(error: unknown): null | undefined {
  return error instanceof OutriggerError && (error.status === 401 || error.status === 403) ? null : undefined;
}

function idOf(message: Record<string, unknown>): Id | null {
  return typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
}

function principalOf(scope: RequestScope): string {
  return `${scope.principal.via}:${scope.principal.id ?? scope.clientIp}`;
}

function refuse(scope: RequestScope, status: number, code: number, message: string, id: Id | null): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id });
  scope.res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' });
  scope.res.end(body);
}
