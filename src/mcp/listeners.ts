/**
 * `subscriptions/listen` (MCP 2026-07-28, SPEC §11.1): a POST whose answer is an event stream
 * that stays open and carries `notifications/tools/list_changed` and
 * `notifications/resources/list_changed` to an agent whose own lists changed. Built beside the
 * SDK, not with its `createMcpHandler` listen router: that router keeps one in-process bus for all
 * streams with no notion of who listens, so it cannot tell only the affected callers, and bounds
 * the process only (no per-principal bound, no bound on a stream nobody reads).
 *
 * A change of the app store or of the permissions (each replica hears both through the change
 * bus, src/store/change-bus.ts, as the tool catalogue does) recomputes each listener's tool list
 * and resource list as `tools/list` and `resources/list` would answer it, and notifies the
 * listeners whose list changed. Bounds: `subscriptions.maxPerPrincipal` streams of one principal
 * and `subscriptions.maxPerProcess` of the replica (a listen past either is refused -32603 naming
 * it), and a stream with more than MAX_UNSENT_BYTES its client has not read is closed.
 * `resourceSubscriptions` (per-URI updates) are not honored yet: the acknowledgement leaves them
 * out, as the protocol lets a server narrow a filter.
 */
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { RequestScope } from '../http/scope.js';
import { isJsonObject } from '../util/objects.js';

/** What a stream may hold unread by its client before it is closed (list-changed notifications are ~150 bytes each). */
export const MAX_UNSENT_BYTES = 64 * 1024;
const KEEP_ALIVE_MS = 15_000;

export interface ListenBounds {
  readonly maxPerPrincipal: number;
  readonly maxPerProcess: number;
}

/** A caller's current lists, as strings compared before and after a change. */
export interface ListSignatures {
  tools(scope: RequestScope): string;
  resources(scope: RequestScope): string | null;
}

interface Listener {
  readonly scope: RequestScope;
  readonly id: string | number;
  readonly principal: string;
  readonly tools: boolean;
  readonly resources: boolean;
  lastTools: string;
  lastResources: string | null;
  send(method: string): void;
  close(): void;
}

export class Listeners {
  private readonly open = new Set<Listener>();
  private readonly perPrincipal = new Map<string, number>();

  constructor(
    private readonly bounds: ListenBounds,
    private readonly lists: ListSignatures,
    private readonly offersResources: boolean,
  ) {}

  get size(): number {
    return this.open.size;
  }

  /** Answers one `subscriptions/listen` POST: a refusal, or the stream held open until the client leaves. */
  serve(scope: RequestScope, message: Record<string, unknown>): void {
    const id = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
    const params = isJsonObject(message.params) ? message.params : {};
    const filter = isJsonObject(params.notifications) ? params.notifications : null;
    if (id === null || filter === null) return refuse(scope, 400, -32602, 'subscriptions/listen needs an id and params.notifications (what to be told of)', id);
    const principal = `${scope.principal.via}:${scope.principal.id ?? scope.clientIp}`;
    const held = this.perPrincipal.get(principal) ?? 0;
    if (held >= this.bounds.maxPerPrincipal)
      return refuse(scope, 429, -32603, `subscriptions/listen refused: you hold ${held} open streams, the most one caller may (subscriptions.maxPerPrincipal); close one first`, id);
    if (this.open.size >= this.bounds.maxPerProcess)
      return refuse(scope, 503, -32603, `subscriptions/listen refused: this server holds its most open streams (subscriptions.maxPerProcess, ${this.bounds.maxPerProcess})`, id);

    const honored: Record<string, boolean> = {};
    if (filter.toolsListChanged === true) honored.toolsListChanged = true;
    if (filter.resourcesListChanged === true && this.offersResources) honored.resourcesListChanged = true;
    const { res } = scope;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', 'x-content-type-options': 'nosniff' });
    const stamp = (params: Record<string, unknown>) => ({ ...params, _meta: { [SUBSCRIPTION_ID_META_KEY]: id } });
    const frame = (payload: unknown) => `event: message\ndata: ${JSON.stringify(payload)}\n\n`;
    res.write(frame({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: stamp({ notifications: honored }) }));
    if (Object.keys(honored).length === 0) return void res.end(frame({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: id } } }));

    const keepAlive = setInterval(() => send(': keepalive\n\n'), KEEP_ALIVE_MS);
    keepAlive.unref();
    const listener: Listener = {
      scope,
      id,
      principal,
      tools: honored.toolsListChanged === true,
      resources: honored.resourcesListChanged === true,
      lastTools: this.lists.tools(scope),
      lastResources: this.lists.resources(scope),
      send: (method) => send(frame({ jsonrpc: '2.0', method, params: stamp({}) })),
      close: () => {
        if (!this.open.delete(listener)) return;
        clearInterval(keepAlive);
        const left = (this.perPrincipal.get(principal) ?? 1) - 1;
        if (left > 0) this.perPrincipal.set(principal, left);
        else this.perPrincipal.delete(principal);
        if (!res.destroyed) res.destroy();
      },
    };
    // A client that does not read: what it left unread passes the bound, and the stream is closed.
    const send = (text: string) => {
      if (res.destroyed) return listener.close();
      res.write(text);
      if (res.writableLength > MAX_UNSENT_BYTES) listener.close();
    };
    this.open.add(listener);
    this.perPrincipal.set(principal, held + 1);
    res.once('close', () => listener.close());
  }

  /** The apps or the permissions changed: each listener whose own list changed is told. */
  notify(): void {
    for (const listener of this.open) {
      if (listener.tools) {
        const now = this.lists.tools(listener.scope);
        if (now !== listener.lastTools) listener.send('notifications/tools/list_changed');
        listener.lastTools = now;
      }
      if (listener.resources) {
        const now = this.lists.resources(listener.scope);
        if (now !== listener.lastResources) listener.send('notifications/resources/list_changed');
        listener.lastResources = now;
      }
    }
  }

  closeAll(): void {
    for (const listener of [...this.open]) listener.close();
  }
}

function refuse(scope: RequestScope, status: number, code: number, message: string, id: string | number | null): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id });
  scope.res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' });
  scope.res.end(body);
}
