import { redactUrl } from '../util/redact-url.js';
import type { SectionReader } from './reader.js';
import type { RedisConfig, RedisNode } from './types.js';

const DEFAULT_URL = 'redis://127.0.0.1:6379';
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62}))*\.?$/;

/**
 * `redis`: exactly one of `url`, `cluster.nodes`, `sentinel` (SPEC §1). Everything a client
 * would only find out at connect time (a port out of range, a node list in `url`, a host that is
 * not a host) is a `path: problem` here, so `outrigger check` catches it.
 */
export function readRedis(r: SectionReader): RedisConfig {
  const problems = r.problems;
  const at = (key: string) => (r.path ? `${r.path}.${key}` : key);
  const given = (['url', 'cluster', 'sentinel'] as const).filter((k) => r.has(k));
  if (given.length > 1) problems.push(`${at(given[1]!)}: give exactly one of redis.url, redis.cluster, redis.sentinel (found ${given.join(' and ')})`);

  const urlText = r.string('url', null);
  const c = r.section('cluster');
  const clusterNodes = c.has('nodes') ? readNodes(c.raw('nodes'), at('cluster.nodes'), problems) : null;
  if (r.has('cluster') && !c.has('nodes')) problems.push(`${at('cluster.nodes')}: is required (a list of host:port, or "h1:7001,h2:7002")`);
  c.finish();
  const s = r.section('sentinel');
  let sentinel: RedisConfig['sentinel'] = null;
  if (r.has('sentinel')) {
    const masterName = s.required('masterName', (v) => (/^[A-Za-z0-9._-]{1,128}$/.test(v) ? null : 'must be the master name the sentinels monitor (letters, digits, . _ -)'));
    const nodes = s.has('nodes') ? readNodes(s.raw('nodes'), at('sentinel.nodes'), problems) : null;
    if (!nodes) problems.push(`${at('sentinel.nodes')}: is required (the sentinels, a list of host:port, or "h1:26379,h2:26379")`);
    sentinel = { masterName, nodes: nodes ?? [], password: s.string('password', null) };
  }
  s.finish();

  let password = r.string('password', null);
  let tls = r.boolean('tls', false);
  let url: string | null = null;
  if (urlText !== null) {
    const checked = checkUrl(urlText);
    if (typeof checked === 'string') problems.push(`${at('url')}: ${checked}`);
    else if (checked) {
      if (checked.password !== null && password !== null) problems.push(`${at('password')}: the password is also inside redis.url; give it once`);
      password ??= checked.password;
      tls ||= checked.tls;
    }
    url = urlText;
  } else if (!clusterNodes && !sentinel) url = DEFAULT_URL;

  const keyPrefix = r.string('keyPrefix', 'outrigger', (v) => (/^[A-Za-z0-9._:-]{1,64}$/.test(v) ? null : 'must be 1-64 letters, digits or . _ : - (braces would move the service hash tag)'));
  const replicated = clusterNodes !== null || sentinel !== null;
  const waitForReplicas = r.integer('waitForReplicas', replicated ? 1 : 0, 0, 16);
  // Above the event producer's WAIT (1 s), far below a freeze a client would wait out.
  const commandTimeoutMs = r.integer('commandTimeoutMs', 2000, 100, 60_000);
  r.finish();
  return {
    url,
    cluster: clusterNodes ? { nodes: clusterNodes } : null,
    sentinel,
    password,
    tls,
    keyPrefix,
    waitForReplicas,
    commandTimeoutMs,
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

/** Nodes as a YAML list or one comma-separated string ("h1:7001,h2:7002", so one ${VAR} carries them). */
export function readNodes(raw: unknown, path: string, problems: string[]): RedisNode[] | null {
  let items: unknown[];
  if (typeof raw === 'string')
    items = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  else if (Array.isArray(raw)) items = raw;
  else {
    problems.push(`${path}: must be a list of host:port or one comma-separated string like "h1:7001,h2:7002"`);
    return null;
  }
  if (items.length === 0) {
    problems.push(`${path}: needs at least one host:port`);
    return null;
  }
  const nodes: RedisNode[] = [];
  items.forEach((item, i) => {
    const node = typeof item === 'string' ? parseNode(item) : 'must be a string host:port';
    if (typeof node === 'string') problems.push(`${path}[${i}]: ${node} (got ${JSON.stringify(item)})`);
    else nodes.push(node);
  });
  return nodes.length === items.length ? nodes : null;
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
