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
import type { SectionReader } from './reader.js';

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

export function readSubscriptions(section: SectionReader): SubscriptionsConfig {
  const r = section.section('retention');
  const retention = {
    changes: r.integer('changes', SUBSCRIPTIONS_DEFAULTS.retention.changes, 100, 10_000_000),
    minutes: r.integer('minutes', SUBSCRIPTIONS_DEFAULTS.retention.minutes, 1, 7 * 24 * 60),
  };
  r.finish();
  const w = section.section('webSockets');
  const d = SUBSCRIPTIONS_DEFAULTS.webSockets;
  const webSockets: WebSocketBounds = {
    maxPerAddress: w.integer('maxPerAddress', d.maxPerAddress, 1, 1_000_000),
    maxPerPrincipal: w.integer('maxPerPrincipal', d.maxPerPrincipal, 1, 1_000_000),
    maxPerProcess: w.integer('maxPerProcess', d.maxPerProcess, 1, 1_000_000),
    idleSeconds: w.integer('idleSeconds', d.idleSeconds, 1, 24 * 3600),
  };
  w.finish();
  const out: SubscriptionsConfig = {
    retention,
    maxPerPrincipal: section.integer('maxPerPrincipal', SUBSCRIPTIONS_DEFAULTS.maxPerPrincipal, 1, 100_000),
    maxPerProcess: section.integer('maxPerProcess', SUBSCRIPTIONS_DEFAULTS.maxPerProcess, 1, 1_000_000),
    maxBufferedEvents: section.integer('maxBufferedEvents', SUBSCRIPTIONS_DEFAULTS.maxBufferedEvents, 1, 1_000_000),
    heartbeatSeconds: section.integer('heartbeatSeconds', SUBSCRIPTIONS_DEFAULTS.heartbeatSeconds, 1, 3600),
    webSockets,
  };
  section.finish();
  return out;
}
