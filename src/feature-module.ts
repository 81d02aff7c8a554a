import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ApiKeyAuthenticator } from './access/authenticate.js';
import type { Principal } from './principal/principal.js';
import type { RequestScope } from './http/scope.js';
import type { SubRouteHandler } from './admin/admin-route.js';
import type { ClientIpResolver } from './http/client-ip.js';
import type { RequestObserver } from './chain/observer.js';
import type { OwnRoute } from './http/route-table.js';
import type { SetupKind } from './setup/setup-kind.js';

/**
 * What a feature (API keys, GraphQL apps, webhooks, agent sign-in) adds to the house: its own
 * routes, admin areas, request observer, setup-file sections, and its lifecycle.
 */
export interface FeatureModule {
  name: string;
  routes?: OwnRoute[];
  adminAreas?: Record<string, SubRouteHandler>;
  observer?: RequestObserver;
  apiKeyAuthenticator?: () => ApiKeyAuthenticator | null;
  setupKinds?: SetupKind[];
  /** Wraps how the request chain finds a client's address (the MCP server's own loopback calls). */
  wrapClientIp?(resolve: ClientIpResolver): ClientIpResolver;
  /** A WebSocket upgrade request: true when the module took the socket (GraphQL subscriptions). */
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** The proxy's authenticator, once built (for credentials checked outside a request: upgrades, open subscriptions). */
  useAuthenticator?(authenticate: (scope: RequestScope) => Promise<Principal> | Principal): void;
  start?(): Promise<void>;
  /**
   * Graceful shutdown, step "stop accepting" (src/shutdown.ts; t0 + drainSeconds, as the server
   * stops accepting): take no more work and finish what is in flight within `timeoutMs` (the
   * webhook worker). Awaited after `flush`, so the two overlap.
   */
  stopAccepting?(timeoutMs: number): Promise<void>;
  /**
   * Graceful shutdown, step "flush": the in-flight requests are done; write what they queued
   * (the webhook tee's events) within `timeoutMs`. Only in a process that serves HTTP.
   */
  flush?(timeoutMs: number): Promise<void>;
  /** Last: everything else closes, modules in the reverse order of their start. */
  stop?(): Promise<void>;
}

export interface FeatureModuleOptions {
  /** Deliver webhooks in this process. */
  worker: boolean;
  /** Serve HTTP in this process (false for `outrigger worker` and `apply`). */
  serve: boolean;
}
