import type { Redis } from 'ioredis';

export type ChangeKind = 'permissions' | 'apikeys' | 'features' | 'graphql-apps' | 'webhooks';
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
 */
export class ChangeBus {
  private readonly listeners = new Set<Listener>();

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, text: string) => {
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
    const subscribe = () => this.subscriber.subscribe(this.channel);
    this.subscriber.on('ready', () => {
      void subscribe().catch(() => {});
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
    await this.publisher.publish(this.channel, JSON.stringify(message)).catch(() => {});
  }
}
