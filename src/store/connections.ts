import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisConfig } from '../config/types.js';
import { redactUrl } from '../util/redact-url.js';
import { watchForStalls, type StallWatchOptions } from './stall-watchdog.js';

/**
 * One connection per role (BullMQ's habit): `commands` for ordinary commands, `subscriber` for
 * pub/sub (a subscribed connection can do nothing else), and a fresh connection for each
 * blocking reader (XREADGROUP BLOCK would stall every other command sharing its socket).
 *
 * On Redis Cluster each role is an ioredis `Cluster` and on Sentinel a `Redis` that asks the
 * sentinels for the master. A `Cluster` is handed out typed as `Redis`: it takes the same
 * commands (routed by key slot; every key of a service shares one hash tag, store/keys.ts), so
 * the features need not know the topology. Only topology-aware code (the change bus, readiness,
 * the event producer's WAIT) looks at `isCluster`.
 */
export interface RedisConnections {
  commands: Redis;
  subscriber: Redis;
  topology: RedisTopology;
  /** A new connection for a blocking reader whose commands block up to `blockMs`; closed by `close()`. */
  blocking(name: string, blockMs: number): Redis;
  /** A new connection that behaves as `commands`, for a writer whose WAIT must not hold up the commands queued behind it; closed by `close()`. */
  writer(name: string): Redis;
  close(): Promise<void>;
}

export type RedisTopology = 'single' | 'cluster' | 'sentinel';

/** `redis` config with `url: embedded` already replaced by the child's URL. */
export type RedisTarget = Pick<RedisConfig, 'url' | 'cluster' | 'sentinel' | 'password' | 'tls'> & Partial<Pick<RedisConfig, 'commandTimeoutMs'>>;

export function topologyOf(target: RedisTarget): RedisTopology {
  return target.cluster ? 'cluster' : target.sentinel ? 'sentinel' : 'single';
}

/** Where a target points, for logs; never the password. */
export function describeTarget(target: RedisTarget): string {
  if (target.cluster) return `cluster ${target.cluster.nodes.map(hostPort).join(',')}`;
  if (target.sentinel) return `sentinel ${target.sentinel.masterName}@${target.sentinel.nodes.map(hostPort).join(',')}`;
  return redactUrl(target.url ?? '');
}

const hostPort = (n: { host: string; port: number }) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`);

/** Per-role behaviour, the same on every topology. */
interface RoleOptions {
  /** Commands issued while disconnected wait (true) or fail fast (false). */
  offlineQueue: boolean;
  maxRetriesPerRequest: number | null;
  /** The change bus's connection: on a cluster, sharded pub/sub (SSUBSCRIBE on the slot's master). */
  subscriber?: boolean;
  /** Reconnect attempts before giving up ('end'); default: never give up. */
  attempts?: number;
  /** Reconnect when Redis stops answering without closing the socket (stall-watchdog.ts); default: not watched. */
  stalls?: StallWatchOptions;
  /**
   * A command not answered within this many ms (from its first send; a resend after a reconnect
   * keeps the deadline) fails with "Command timed out", which the request answers as 503
   * (redis-errors.ts); default: no deadline (blocking readers, the subscriber).
   */
  commandTimeoutMs?: number;
}

// A reconnect every 200 ms..2 s forever: Redis coming back must heal the process by itself.
const retryForever = (times: number) => Math.min(200 * times, 2000);
// On a cluster or behind Sentinel a reconnect finds the promoted replica, usually within
// seconds of the failure, so the attempts stay at most 1 s apart to follow it promptly.
const retryFollow = (times: number) => Math.min(100 * times, 1000);

/**
 * A master demoted to replica (a Sentinel failover while this client stayed connected, or the
 * old master back as a replica) answers writes with READONLY: reconnect, which asks the sentinels
 * again, and resend the command.
 */
const reconnectOnReadonly = (error: Error) => (error.message.startsWith('READONLY') ? 2 : false);

/**
 * One plain address (no Sentinel) that answers READONLY: the address may be a service in front
 * of a failover that now leads to a new master, which only a new connection reaches. So, at most
 * every 5 s, a short-lived probe connects to the same address and asks ROLE; only when it finds a
 * master does the connection reconnect. A blind reconnect on READONLY (as Sentinel mode does)
 * churned the connection while the server stayed a replica: every write retried (the webhook
 * tee keeps its batch on a refusal) dropped it again, and meanwhile every command failed as
 * "unreachable" instead of saying what Redis refused (issue 28 item 2).
 */
function probeOnReadonly(url: string, options: RedisOptions, every: number, reconnect: () => void): (error: Error) => false {
  let last = 0;
  return (error) => {
    if (!error.message.startsWith('READONLY') || Date.now() - last < every) return false;
    last = Date.now();
    const probe = new Redis(url, {
      ...options,
      connectionName: 'outrigger-readonly-probe',
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      reconnectOnError: null,
      connectTimeout: 2000,
    });
    probe.on('error', () => {});
    probe
      .connect()
      .then(() => probe.role())
      .then((role) => {
        if (Array.isArray(role) && role[0] === 'master') reconnect();
      })
      .catch(() => {})
      .finally(() => probe.disconnect());
    return false;
  };
}

export function openRedis(target: RedisTarget, connectionName: string, role: RoleOptions): Redis {
  const attempts = role.attempts;
  const retry = attempts !== undefined ? (times: number) => (times > attempts ? null : 200) : target.cluster || target.sentinel ? retryFollow : retryForever;
  const tls = target.tls ? {} : undefined;
  const common: RedisOptions = {
    connectionName,
    enableOfflineQueue: role.offlineQueue,
    maxRetriesPerRequest: role.maxRetriesPerRequest,
    ...(role.commandTimeoutMs !== undefined ? { commandTimeout: role.commandTimeoutMs } : {}),
    ...(target.password !== null ? { password: target.password } : {}),
    ...(tls ? { tls } : {}),
  };
  // The change bus subscribes again on every 'ready' itself, with its rejection handled; ioredis'
  // own re-subscribe sends SUBSCRIBE with none, so a connection closed right after a reconnect
  // surfaced as an unhandled "Connection is closed." (seen once in CI, operator-logs' Redis
  // outage). A cluster keeps it: its sharded subscribers follow slot moves through it.
  const resubscribe = role.subscriber === true ? { autoResubscribe: false } : {};
  let conn: Redis;
  if (target.cluster) {
    // Node connections keep ioredis' own offline queue: they connect lazily, on their first command.
    const { enableOfflineQueue: _nodeQueue, ...nodeOptions } = common;
    const options: ClusterOptions = {
      redisOptions: nodeOptions,
      clusterRetryStrategy: retry,
      enableOfflineQueue: role.offlineQueue,
      // A failover takes the cluster's node timeout plus an election; commands aimed at the dead
      // master are retried against the refreshed slot map meanwhile (16 redirections at most).
      retryDelayOnFailover: 300,
      retryDelayOnClusterDown: 300,
      retryDelayOnTryAgain: 200,
      // The slot map is also refreshed on a timer, so a replica promoted while this process sent
      // nothing to that shard is found without a failed command first.
      slotsRefreshInterval: 2000,
      slotsRefreshTimeout: 2000,
      shardedSubscribers: role.subscriber === true,
    };
    conn = new Cluster(target.cluster.nodes, options) as unknown as Redis;
  } else if (target.sentinel) {
    conn = new Redis({
      ...common,
      ...resubscribe,
      sentinels: target.sentinel.nodes,
      name: target.sentinel.masterName,
      role: 'master',
      ...(target.sentinel.password !== null ? { sentinelPassword: target.sentinel.password } : {}),
      ...(tls ? { enableTLSForSentinelMode: true } : {}),
      retryStrategy: retry,
      sentinelRetryStrategy: retry,
      // Not ioredis' failoverDetector: its disconnect can land while a reconnect is resolving
      // the master, and that connection then ends for good (seen once in the failover test).
      // A killed master closes its sockets, and a demoted one answers READONLY (below).
      reconnectOnError: reconnectOnReadonly,
    });
  } else {
    const url = target.url ?? '';
    const options: RedisOptions = { ...common, ...resubscribe, retryStrategy: retry, lazyConnect: false, reconnectOnError: probeOnReadonly(url, common, 5000, () => conn.disconnect(true)) };
    conn = new Redis(url, options);
  }
  // Errors are reported through health/metrics and the callers; an unhandled 'error' event would crash.
  conn.on('error', () => {});
  if (attempts === undefined && !target.cluster) {
    // A connection that must heal by itself never stays ended: ioredis ends one when a connect
    // attempt is aborted halfway (a disconnect racing a reconnect), whatever the retry strategy.
    // Only its owner's quit() or disconnect() ends it for good.
    const disconnect = conn.disconnect.bind(conn);
    const quit = conn.quit.bind(conn);
    conn.disconnect = (reconnect?: boolean) => {
      if (!reconnect) closing.add(conn);
      disconnect(reconnect);
    };
    conn.quit = ((callback?: Parameters<Redis['quit']>[0]) => {
      closing.add(conn);
      return quit(callback);
    }) as Redis['quit'];
    conn.on('end', () => {
      if (closing.has(conn)) return;
      setTimeout(() => {
        if (!closing.has(conn) && conn.status === 'end') conn.connect().catch(() => {});
      }, 1000).unref();
    });
    // On a cluster ioredis refreshes the slot map every 2 s and sends to the promoted master anyway.
    if (role.stalls) watchForStalls(conn, role.stalls, () => closing.has(conn));
  }
  return conn;
}

const closing = new WeakSet<Redis>();

/** No reply and nothing read for this long: the Redis at the other end is taken for frozen. */
const STALL_MS = 3000;
/** redis.commandTimeoutMs's default, for a target built without it. */
const DEFAULT_COMMAND_TIMEOUT_MS = 2000;

/** Closes a connection for good (QUIT, then a disconnect if QUIT cannot be sent). */
/** How long a polite QUIT may take on a connection that is up before it is cut. */
const QUIT_WAIT_MS = 1000;

/**
 * QUIT lets Redis finish what it was sent, but only a ready connection can answer it: on one
 * that is reconnecting (Redis down at shutdown) a QUIT waits in the offline queue for a Redis
 * that may never come back, and on a frozen one it waits behind what froze. So: QUIT only when
 * ready, for at most QUIT_WAIT_MS, then disconnect in every case.
 */
async function closeRedis(conn: Redis): Promise<void> {
  if (conn.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, QUIT_WAIT_MS)));
    await Promise.race([
      conn.quit().then(
        () => {},
        () => {},
      ),
      waited,
    ]);
    clearTimeout(timer);
  }
  conn.disconnect();
}

export function createRedisConnections(target: RedisTarget, name: string): RedisConnections {
  const opened: Redis[] = [];
  const open = (role: string, options: RoleOptions): Redis => {
    const conn = openRedis(target, `${name}:${role}`, options);
    opened.push(conn);
    return conn;
  };
  // Commands issued while disconnected fail fast instead of piling up; callers that must not
  // lose data (the webhook queue) keep it themselves and retry. Commands already sent when Redis
  // froze fail at their deadline (redis.commandTimeoutMs) rather than wait out the freeze, even
  // when the stall watchdog's reconnect resends them.
  const commandsRole: RoleOptions = { offlineQueue: false, maxRetriesPerRequest: 1, stalls: { stallMs: STALL_MS }, commandTimeoutMs: target.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS };
  const commands = open('commands', commandsRole);
  // The subscriber sends nothing once subscribed: it PINGs so that a frozen master is noticed
  // and the change bus follows the promoted replica (else revocations would wait for the caches' bound).
  const subscriber = open('subscriber', { offlineQueue: true, maxRetriesPerRequest: null, subscriber: true, stalls: { stallMs: STALL_MS, probeEveryMs: 2000 } });
  return {
    commands,
    subscriber,
    topology: topologyOf(target),
    blocking: (role, blockMs) => open(role, { offlineQueue: true, maxRetriesPerRequest: null, stalls: { stallMs: blockMs + STALL_MS } }),
    writer: (role) => open(role, commandsRole),
    async close() {
      await Promise.allSettled(opened.map(closeRedis));
    },
  };
}

export function isCluster(conn: Redis): boolean {
  return (conn as unknown as { isCluster?: boolean }).isCluster === true;
}

/** Resolves once the connection is ready, or rejects after `timeoutMs` with a clear reason. */
export function waitForRedis(conn: Redis, timeoutMs: number): Promise<void> {
  if (conn.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError = '';
    const onError = (error: Error) => (lastError = error.message);
    const timer = setTimeout(() => {
      conn.off('ready', onReady);
      conn.off('error', onError);
      reject(new Error(`Redis did not answer within ${timeoutMs} ms${lastError ? ` (${lastError})` : ''}`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      conn.off('error', onError);
      resolve();
    };
    conn.once('ready', onReady);
    conn.on('error', onError);
  });
}
