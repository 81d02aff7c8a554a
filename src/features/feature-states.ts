import type { Redis } from 'ioredis';
import type { FeatureState } from '../config/types.js';
import type { ChangeBus } from '../store/change-bus.js';
import type { RedisKeys } from '../store/keys.js';

export type FeatureName = 'api-keys' | 'webhooks';
export const FEATURE_NAMES: readonly FeatureName[] = ['api-keys', 'webhooks'];
export type FeatureAction = 'install' | 'enable' | 'disable' | 'uninstall';

const TRANSITIONS: Record<FeatureAction, (from: FeatureState) => FeatureState | string> = {
  install: (from) => (from === 'not-installed' ? 'enabled' : from),
  enable: (from) => (from === 'not-installed' ? 'the feature is not installed; install it first' : 'enabled'),
  disable: (from) => (from === 'not-installed' ? 'the feature is not installed; there is nothing to disable' : 'disabled'),
  uninstall: () => 'not-installed',
};

/**
 * SPEC §5.5: each feature is not-installed, enabled or disabled. The state lives in Redis (an
 * admin's choice outlives any replica); the config only seeds it when Redis holds none. Every
 * replica keeps the states in memory, refreshed by the change bus and a poll, so checking a
 * feature on the hot path costs nothing. Nothing is ever deleted by a transition.
 */
export class FeatureStates {
  private states: Record<FeatureName, FeatureState>;
  private poller: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly bus: ChangeBus,
    private readonly initial: Record<FeatureName, FeatureState>,
  ) {
    this.states = { ...initial };
  }

  async start(): Promise<void> {
    const seed = this.redis.multi();
    for (const name of FEATURE_NAMES) seed.hsetnx(this.keys.features, name, this.initial[name]);
    await seed.exec().catch(() => {});
    await this.reload().catch(() => {});
    this.bus.on((m) => {
      if (m === 'resync' || m.kind === 'features') void this.reload().catch(() => {});
    });
    this.poller = setInterval(() => void this.reload().catch(() => {}), 2000);
    this.poller.unref();
  }

  stop(): void {
    if (this.poller) clearInterval(this.poller);
  }

  private async reload(): Promise<void> {
    const stored = await this.redis.hgetall(this.keys.features);
    const next = { ...this.states };
    for (const name of FEATURE_NAMES) {
      const value = stored[name];
      if (value === 'enabled' || value === 'disabled' || value === 'not-installed') next[name] = value;
    }
    this.states = next;
  }

  state(name: FeatureName): FeatureState {
    return this.states[name];
  }

  enabled(name: FeatureName): boolean {
    return this.states[name] === 'enabled';
  }

  list(): Array<{ name: FeatureName; state: FeatureState }> {
    return FEATURE_NAMES.map((name) => ({ name, state: this.states[name] }));
  }

  /** Applies an action; returns the new state or a sentence saying why it cannot be done. */
  async apply(name: FeatureName, action: FeatureAction): Promise<{ state: FeatureState } | { problem: string }> {
    await this.reload();
    const next = TRANSITIONS[action](this.states[name]);
    if (next !== 'enabled' && next !== 'disabled' && next !== 'not-installed') return { problem: next };
    await this.redis.hset(this.keys.features, name, next);
    this.states = { ...this.states, [name]: next };
    await this.bus.publish({ kind: 'features', id: name });
    return { state: next };
  }
}
