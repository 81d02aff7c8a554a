import type { OutriggerConfig } from '../config/types.js';

export interface StartFacts {
  config: OutriggerConfig;
  /** Null for `outrigger worker`, which serves no HTTP. */
  url: string | null;
  redis: string;
  redisReady: boolean;
  features: Record<string, string>;
  /** Documents loaded per setup section: permissions, apps, webhooks. */
  loaded: Record<string, number>;
  worker: boolean;
  /** The prefixes Outrigger answers itself (the route table), so an operator sees what it shadows. */
  routes: string[];
}

/**
 * The one line an operator reads at start: where it listens, what it fronts, whether Redis
 * answered, the features and their states, what was loaded, and whether this process delivers
 * webhooks. The same facts are fields of the JSON line, the message is them in one sentence.
 */
export function startSummary(f: StartFacts): { fields: Record<string, unknown>; message: string } {
  const { config } = f;
  const fields = {
    url: f.url ?? undefined,
    upstream: config.upstream.url,
    service: config.service.id,
    redis: f.redis,
    redisReady: f.redisReady,
    aclMode: config.acl.mode,
    identity: config.upstream.identity.mode,
    users: config.users.source,
    features: f.features,
    loaded: f.loaded,
    worker: f.worker ? 'on' : 'off',
    routes: f.routes,
    node: process.version,
  };
  // The keys are plural section names (permissions, apps, webhooks): one of each reads "1 app".
  const loaded = Object.entries(f.loaded)
    .map(([k, n]) => `${n} ${n === 1 ? k.replace(/s$/, '') : k}`)
    .join(', ');
  const features = Object.entries(f.features)
    .map(([k, s]) => `${k} ${s}`)
    .join(', ');
  const head = f.url ? `Outrigger listening on ${f.url}, proxying to ${config.upstream.url}` : `Outrigger webhook worker for service ${config.service.id}`;
  const message =
    `${head}; Redis ${f.redis} ${f.redisReady ? 'ready' : 'NOT reachable yet'}; ` +
    `acl ${config.acl.mode}, identity ${config.upstream.identity.mode}; features: ${features}; loaded: ${loaded}; webhook worker ${f.worker ? 'on' : 'off'}`;
  return { fields, message };
}
