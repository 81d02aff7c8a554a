import type { Redis } from 'ioredis';
import { isCluster } from './connections.js';

export type ChangeKind = 'permissions' | 'apikeys' | 'features' | 'graphql-apps' | 'webhooks' | 'subscribed-collections' | 'response-cache';
export interface ChangeMessage {
  kind: ChangeKind;
  id?: string;
}
type Listener = (message: ChangeMessage | 'resync') => void;

/**
 * Replicas keep in-process copies of permissions, keys, apps and webhooks; this bus tells them
 * when to drop one. Pub/sub is fire-and-forget: a message sent while a replica was disconnected
 * is lost, so every (re)subscription also emits `resync` and listeners flush what they hold.
 * Each cache additionally has its own hard staleness bound for the message lost without a disconnect.
 *
 * On Redis Cluster the bus uses sharded pub/sub (SSUBSCRIBE/SPUBLISH): the channel carries the
 * service's hash tag, so it lives on the shard that holds the service's data, messages are not
 * broadcast over the whole cluster bus, and ioredis moves the subscription to whichever node
 * owns the slot after a failover or a resharding ('subscribersReady', which also means resync).
 */
export class ChangeBus {
  private readonly listeners = new Set<Listener>();

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {}

  async start(): Promise<void> {
    const sharded = isCluster(this.subscriber);
    this.subscriber.on(sharded ? 'smessage' : 'message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      let message: ChangeMessage;
      try {
        message = JSON.parse(text) as ChangeMessage;
      } catch {
        return;
      }
      for (const listener of this.listeners) listener(message);
    });
    // SUBSCRIBE must wait for ioredis's ready check: sent earlier, it makes Redis refuse the
    // check's INFO ("only subscriber commands"), the connection drops and comes back ready but
    // unsubscribed (seen in ~10% of starts). So subscribe on every 'ready' (a repeat is
    // harmless) and tell listeners to resync, since messages may have been missed meanwhile.
    const subscribe = () => (sharded ? this.subscriber.ssubscribe(this.channel) : this.subscriber.subscribe(this.channel));
    const resubscribe = () => {
      void subscribe().catch(() => {});
      for (const listener of this.listeners) listener('resync');
    };
    this.subscriber.on('ready', resubscribe);
    // ioredis re-subscribes by itself after a topology change; the listeners still resync.
    if (sharded)
      this.subscriber.on('subscribersReady', () => {
        for (const listener of this.listeners) listener('resync');
      });
    // Not ready yet (Redis still connecting, or down at start): the 'ready' handler subscribes later.
    if (this.subscriber.status === 'ready') await subscribe();
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells every replica (this one included) that something changed. Never throws. */
  async publish(message: ChangeMessage): Promise<void> {
    for (const listener of this.listeners) listener(message);
    const text = JSON.stringify(message);
    await (isCluster(this.publisher) ? this.publisher.spublish(this.channel, text) : this.publisher.publish(this.channel, text)).catch(() => {});
  }
}
