/**
 * A private redis-server on a loopback port for the whole run (no persistence: the bench measures
 * the proxy, not the disk), and the INFO readings the key and webhook scenarios report.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, spawnProcess, waitForPort } from './processes.mjs';

export async function startRedis(workDir) {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error) throw new Error('redis-server is not on the PATH; install it (Debian/Ubuntu: apt-get install redis-server) and run the bench again');
  const version = /v=([\d.]+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  const port = await freePort();
  const proc = spawnProcess(
    'redis-server',
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', workDir, '--protected-mode', 'yes', '--daemonize', 'no', '--loglevel', 'warning'],
    { log: join(workDir, 'redis.log') },
  );
  await waitForPort(port, 10_000, 'redis-server');
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return {
    url,
    pid: proc.pid,
    version,
    client,
    async stop() {
      client.disconnect();
      await proc.stop();
    },
  };
}

/** total_commands_processed and per-command calls (INFO stats + commandstats). */
export async function commandCounters(client) {
  const text = await client.info('all');
  const total = Number(/total_commands_processed:(\d+)/.exec(text)?.[1] ?? NaN);
  const perCommand = {};
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) perCommand[match[1]] = Number(match[2]);
  return { total, perCommand };
}

/** What happened between two readings; the reading's own INFO calls are not counted. */
export function commandDelta(before, after) {
  const perCommand = {};
  for (const [name, calls] of Object.entries(after.perCommand)) {
    const d = calls - (before.perCommand[name] ?? 0) - (name === 'info' ? 1 : 0);
    if (d > 0) perCommand[name] = d;
  }
  return { total: after.total - before.total - 1, perCommand };
}

/**
 * KEYS[1] a webhook stream: how many events it holds. An entry of version 4 (src/webhooks/
 * stream-record.ts) holds as many as its head says; any other entry one.
 */
const COUNT_STREAM_EVENTS = `
local n, start = 0, '-'
while true do
  local page = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', 1000)
  if #page == 0 then return n end
  for _, entry in ipairs(page) do
    local head = entry[2][2]
    local events = head and #head < 32 and string.match(head, '^{"v":4,"n":(%d+)}$')
    n = n + (events and tonumber(events) or 1)
  end
  start = '(' .. page[#page][1]
end
`;

/** Events in a webhook stream (XLEN when that already reaches `atLeast`: a stream of one event per entry). */
export async function streamEvents(client, key, atLeast = Infinity) {
  const entries = await client.xlen(key);
  if (entries >= atLeast) return entries;
  return Number(await client.eval(COUNT_STREAM_EVENTS, 1, key));
}
