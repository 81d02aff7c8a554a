import { z } from 'zod';
import { redactUrl } from '../util/redact-url.js';
import { ALWAYS, boolean, got, integer, optionalSection, optionalText, required, section, text } from './fields.js';
import type { RedisConfig, RedisNode } from './types.js';

const DEFAULT_URL = 'redis://127.0.0.1:6379';
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$/;

/** Nodes as a YAML list or one comma-separated string ("h1:7001,h2:7002", so one ${VAR} carries them). */
function nodeList(whenMissing: string) {
  return z
    .union([z.string(), z.array(z.string({ error: (iss) => `must be a string host:port ${got(iss.input)}` }))], {
      error: (iss) => (iss.input === undefined ? `is required ${whenMissing}` : 'must be a list of host:port or one comma-separated string like "h1:7001,h2:7002"'),
    })
    .transform((raw, ctx) => {
      const items =
        typeof raw === 'string'
          ? raw
              .split(',')
              .map((s) => s.trim())
              .filter((s) => s !== '')
          : raw;
      if (items.length === 0) ctx.addIssue({ code: 'custom', message: 'needs at least one host:port', input: raw });
      const nodes: RedisNode[] = [];
      items.forEach((item, i) => {
        const node = parseNode(item);
        if (typeof node === 'string') ctx.addIssue({ code: 'custom', message: `${node} (got ${JSON.stringify(item)})`, path: [i], input: item });
        else nodes.push(node);
      });
      return nodes;
    });
}

const urlCheck = (text: string): string | null => {
  const checked = checkUrl(text);
  return typeof checked === 'string' ? checked : null;
};

const redisFields = optionalSection({
  url: optionalText(urlCheck),
  cluster: section({ nodes: nodeList('(a list of host:port, or "h1:7001,h2:7002")') }).optional(),
  sentinel: section({
    masterName: required((v) => (/^[A-Za-z0-9._-]{1,128}$/.test(v) ? null : 'must be the master name the sentinels monitor (letters, digits, . _ -)')),
    nodes: nodeList('(the sentinels, a list of host:port, or "h1:26379,h2:26379")'),
    password: optionalText(),
  }).optional(),
  password: optionalText(),
  tls: boolean().default(false),
  keyPrefix: text((v) => (/^[A-Za-z0-9._:-]{1,64}$/.test(v) ? null : 'must be 1-64 letters, digits or . _ : - (braces would move the service hash tag)'), { fallback: 'outrigger' }),
  /** Default: 1 on cluster and sentinel, 0 on a single node (toRedisConfig). */
  waitForReplicas: integer(0, 16).optional(),
  // Above the event producer's WAIT (1 s), far below a freeze a client would wait out.
  commandTimeoutMs: integer(100, 60_000).default(2000),
});

/**
 * `redis`: exactly one of `url`, `cluster.nodes`, `sentinel` (SPEC §1). Everything a client
 * would only find out at connect time (a port out of range, a node list in `url`, a host that is
 * not a host) is a `path: problem` here, so `outrigger check` catches it.
 */
export const redisSchema = redisFields
  .superRefine((value, ctx) => {
    const given = (['url', 'cluster', 'sentinel'] as const).filter((k) => value[k] !== undefined && value[k] !== null);
    if (given.length > 1) ctx.addIssue({ code: 'custom', path: [given[1]!], message: `give exactly one of redis.url, redis.cluster, redis.sentinel (found ${given.join(' and ')})` });
    const inUrl = typeof value.url === 'string' ? checkUrl(value.url) : null;
    if (inUrl && typeof inUrl !== 'string' && inUrl.password !== null && typeof value.password === 'string')
      ctx.addIssue({ code: 'custom', path: ['password'], message: 'the password is also inside redis.url; give it once' });
  }, ALWAYS)
  .transform(toRedisConfig);

function toRedisConfig(r: z.output<typeof redisFields>): RedisConfig {
  const inUrl = r.url === null ? null : checkUrl(r.url);
  const fromUrl = inUrl && typeof inUrl !== 'string' ? inUrl : { password: null, tls: false };
  const cluster = r.cluster ? { nodes: r.cluster.nodes } : null;
  const sentinel = r.sentinel ? { masterName: r.sentinel.masterName, nodes: r.sentinel.nodes, password: r.sentinel.password } : null;
  return {
    url: r.url ?? (cluster || sentinel ? null : DEFAULT_URL),
    cluster,
    sentinel,
    password: r.password ?? fromUrl.password,
    tls: r.tls || fromUrl.tls,
    keyPrefix: r.keyPrefix,
    waitForReplicas: r.waitForReplicas ?? (cluster || sentinel ? 1 : 0),
    commandTimeoutMs: r.commandTimeoutMs,
  };
}

/** A single-node URL: the problem as text, or what it carries. */
function checkUrl(text: string): string | { password: string | null; tls: boolean } | null {
  if (text === 'embedded') return null;
  if (text.includes(',') || /^[^/]*:\d+\s*[,;\s]\s*\S/.test(text)) return 'takes one node; for several use redis.cluster.nodes (Redis Cluster) or redis.sentinel.nodes (Sentinel)';
  const scheme = /^(rediss?):\/\//.exec(text);
  if (!scheme) return `must be redis://host:port, rediss://host:port or "embedded" (got ${JSON.stringify(redactUrl(text))})`;
  const port = /^rediss?:\/\/(?:[^@/]*@)?(?:\[[^\]]*\]|[^:/?#]*)(?::([^/?#]*))?/.exec(text)?.[1];
  if (port !== undefined && port !== '' && !validPort(port)) return `port must be an integer from 1 to 65535 (got ${JSON.stringify(port)})`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return `is not a valid URL (expected redis://[user:password@]host:port[/db])`;
  }
  if (!u.hostname) return 'needs a host, e.g. redis://127.0.0.1:6379';
  const host = u.hostname;
  if (!host.startsWith('[') && !HOSTNAME.test(host)) return `host ${JSON.stringify(host)} is not a hostname or IP address`;
  if (u.pathname && u.pathname !== '/' && !/^\/(\d|1[0-5])$/.test(u.pathname)) return 'the path may only name a database number from 0 to 15 (e.g. redis://h:6379/0)';
  let password: string | null = null;
  try {
    password = u.password ? decodeURIComponent(u.password) : null;
  } catch {
    return 'the password is not valid percent-encoding (write % as %25)';
  }
  return { password, tls: scheme[1] === 'rediss' };
}

function parseNode(text: string): RedisNode | string {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s/]+):([^:]*)$/.exec(text.trim());
  if (!m) return 'must be host:port (an IPv6 address in brackets, [::1]:7001)';
  const [, hostPart, port] = m as unknown as [string, string, string];
  if (!validPort(port)) return `port must be an integer from 1 to 65535`;
  const host = hostPart.startsWith('[') ? hostPart.slice(1, -1) : hostPart;
  if (!hostPart.startsWith('[') && !HOSTNAME.test(host)) return `${JSON.stringify(host)} is not a hostname or IP address`;
  return { host, port: Number(port) };
}

const validPort = (text: string) => /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535;
