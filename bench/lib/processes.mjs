/**
 * Every process the bench starts goes through here, so every one of them is stopped by its PID:
 * at the end of a phase, and on any error, Ctrl-C or SIGTERM of the bench itself.
 */
import { fork, spawn } from 'node:child_process';
import { readFileSync, openSync, closeSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

const running = new Set();

/** CPU ticks per second for /proc/<pid>/stat (getconf CLK_TCK; 100 on every Linux we target). */
const CLK_TCK = 100;

export function track(child, name) {
  const entry = { child, name, pid: child.pid };
  running.add(entry);
  child.once('exit', () => running.delete(entry));
  return entry;
}

/** A helper server of bench/servers (node + IPC): resolves with its `ready` message ({port, ...}). */
export async function forkServer(name, script, { args = [], env = {}, log, timeoutMs = 20_000, execArgv = [] } = {}) {
  const out = log ? openSync(log, 'a') : 'ignore';
  const child = fork(script, args, {
    execArgv,
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', out, out, 'ipc'],
  });
  if (log) closeSync(out);
  const entry = track(child, name);
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not report ready within ${timeoutMs} ms${log ? ` (see ${log})` : ''}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before it was ready${log ? ` (see ${log})` : ''}`));
    });
    child.on('message', function onMessage(message) {
      if (message?.ready) {
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(message);
      }
    });
  });
  let seq = 0;
  return {
    ...ready,
    pid: child.pid,
    name,
    /** Request/response over IPC: the server answers `{id, ...}` to `{id, cmd, ...}`. */
    ask(cmd, extra = {}) {
      const id = ++seq;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${name} did not answer '${cmd}'`)), 30_000);
        const onMessage = (message) => {
          if (message?.id !== id) return;
          clearTimeout(timer);
          child.off('message', onMessage);
          resolve(message);
        };
        child.on('message', onMessage);
        child.send({ id, cmd, ...extra });
      });
    },
    stop: () => stopProcess(entry),
  };
}

/** Any other program (redis-server, nginx, the Outrigger CLI); stdout/stderr go to `log`. */
export function spawnProcess(name, command, args, { env = {}, log, cwd } = {}) {
  const out = log ? openSync(log, 'a') : 'ignore';
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', out, out], cwd });
  if (log) closeSync(out);
  const entry = track(child, name);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.once('error', () => {});
  return { pid: child.pid, name, child, exited, stop: (signal) => stopProcess(entry, signal) };
}

/** SIGTERM (or `signal`), then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function stopProcess(entry, signal = 'SIGTERM', graceMs = 5000) {
  const { child } = entry;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(entry.pid, signal);
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(entry.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }, graceMs);
  await gone;
  clearTimeout(timer);
}

export async function stopAll() {
  await Promise.all([...running].reverse().map((entry) => stopProcess(entry)));
}

/**
 * How an A/B script ends: `main()`, then the load average (what else ran shows there), every
 * process stopped whatever happened, and exit 0 (a failure of `main` propagates instead).
 */
export async function runThenStopAll(main, say) {
  try {
    await main();
    say(
      `load average at end ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' / ')}`,
    );
  } finally {
    await stopAll();
  }
  process.exit(0);
}

let hooked = false;
/** Stops every child on exit paths the bench does not control (Ctrl-C, SIGTERM, a crash). */
export function stopAllOnExit() {
  if (hooked) return;
  hooked = true;
  const killNow = () => {
    for (const entry of running) {
      try {
        process.kill(entry.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  };
  process.once('exit', killNow);
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping ${running.size} child processes\n`);
      stopAll().finally(() => process.exit(130));
    });
  }
}

/** utime + stime of a process in microseconds (all its threads), from /proc/<pid>/stat. */
export function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/** CPU of several processes (e.g. nginx master + worker), summed. */
export function cpuMicrosOf(pids) {
  let sum = 0;
  for (const pid of pids) sum += cpuMicros(pid);
  return sum;
}

/** Direct children of a process (nginx workers). */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port, timeoutMs = 10_000, what = `port ${port}`) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${what} did not accept connections within ${timeoutMs} ms`);
    await sleep(50);
  }
}

export { sleep };

/**
 * CPU time (µs) used by this process and everything it started: itself, its reaped children
 * (cutime/cstime), and every live child (with their own reaped children, e.g. nginx workers).
 */
export function ownTreeCpuMicros() {
  const all = (pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1e6) / CLK_TCK;
    } catch {
      return 0;
    }
  };
  let sum = all(process.pid);
  for (const entry of running) {
    sum += all(entry.pid);
    for (const grandchild of childPids(entry.pid)) sum += all(grandchild);
  }
  return sum;
}

/** Busy CPU time of the whole machine (µs, all cores), from /proc/stat. */
export function machineBusyMicros() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = line;
  return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1e6) / CLK_TCK;
}
