/**
 * `subscriptions:` (SPEC §6.5): GraphQL subscriptions' change feed and bounds.
 *
 *   retention.changes     changes kept in the feed per service for resuming (default 10,000)
 *   retention.minutes     and for how long (default 10); a resume from further back gets an error event
 *   maxPerPrincipal       open subscriptions of one principal on one replica (default 20; anonymous: per client address)
 *   maxPerProcess         open subscriptions of one replica (default 10,000)
 *   maxBufferedEvents     events waiting for one subscriber before it is closed (default 1,000; 1 MiB too)
 *   heartbeatSeconds      an SSE comment or a WebSocket ping this often (default 15)
 *   webSockets.maxPerAddress    open WebSockets of one client address (an IPv4 address or an IPv6 /64; default 100)
 *   webSockets.maxPerPrincipal  open WebSockets of one user or key (default 20)
 *   webSockets.maxPerProcess    open WebSockets of one replica (default 5,000; at most half the open-file limit)
 *   webSockets.idleSeconds      an acknowledged WebSocket with no subscription is closed after this long (default 120)
 */
import { integer, optionalSection } from './fields.js';

export interface SubscriptionsConfig {
  retention: { changes: number; minutes: number };
  maxPerPrincipal: number;
  maxPerProcess: number;
  maxBufferedEvents: number;
  heartbeatSeconds: number;
  webSockets: WebSocketBounds;
}

/** Sockets are bounded apart from subscriptions: a socket costs a file descriptor and buffers before it subscribes to anything. */
export interface WebSocketBounds {
  maxPerAddress: number;
  maxPerPrincipal: number;
  maxPerProcess: number;
  idleSeconds: number;
}

export const SUBSCRIPTIONS_DEFAULTS: SubscriptionsConfig = {
  retention: { changes: 10_000, minutes: 10 },
  maxPerPrincipal: 20,
  maxPerProcess: 10_000,
  maxBufferedEvents: 1000,
  heartbeatSeconds: 15,
  webSockets: { maxPerAddress: 100, maxPerPrincipal: 20, maxPerProcess: 5000, idleSeconds: 120 },
};

const D = SUBSCRIPTIONS_DEFAULTS;

export const subscriptionsSchema = optionalSection({
  retention: optionalSection({
    changes: integer(100, 10_000_000).default(D.retention.changes),
    minutes: integer(1, 7 * 24 * 60).default(D.retention.minutes),
  }),
  maxPerPrincipal: integer(1, 100_000).default(D.maxPerPrincipal),
  maxPerProcess: integer(1, 1_000_000).default(D.maxPerProcess),
  maxBufferedEvents: integer(1, 1_000_000).default(D.maxBufferedEvents),
  heartbeatSeconds: integer(1, 3600).default(D.heartbeatSeconds),
  webSockets: optionalSection({
    maxPerAddress: integer(1, 1_000_000).default(D.webSockets.maxPerAddress),
    maxPerPrincipal: integer(1, 1_000_000).default(D.webSockets.maxPerPrincipal),
    maxPerProcess: integer(1, 1_000_000).default(D.webSockets.maxPerProcess),
    idleSeconds: integer(1, 24 * 3600).default(D.webSockets.idleSeconds),
  }),
});
