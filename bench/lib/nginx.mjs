/**
 * nginx as the reverse-proxy baseline, configured as in notes §B: one worker, upstream keep-alive
 * (`keepalive 128`, HTTP/1.1, `Connection ""`), no access log. When nginx is missing it is
 * installed from Debian if the bench runs as root (apt-get install nginx-light); otherwise the
 * baseline is skipped with a message saying how to get it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { childPids, freePort, sleep, spawnProcess, waitForPort } from './processes.mjs';

function findNginx() {
  for (const candidate of ['nginx', '/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx']) {
    const probe = spawnSync(candidate, ['-v'], { encoding: 'utf8' });
    if (!probe.error) return { binary: candidate, version: (probe.stderr || probe.stdout).trim().replace(/^nginx version: (nginx\/)?/, '') };
  }
  return null;
}

/** Resolves to {binary, version} or {skipped: reason}. */
export function ensureNginx(log = console.log) {
  const found = findNginx();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const hasApt = !spawnSync('apt-get', ['--version']).error;
  if (!isRoot || !hasApt) {
    return {
      skipped: `nginx is not installed${isRoot ? ' and apt-get is not available' : ' and the bench is not running as root'}; install it (Debian/Ubuntu: sudo apt-get install -y nginx-light) to get the nginx baseline`,
    };
  }
  log('bench: nginx is missing; installing nginx-light from Debian (apt-get)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { encoding: 'utf8', env });
  const install = update.status === 0 ? spawnSync('apt-get', ['install', '-y', '-qq', 'nginx-light'], { encoding: 'utf8', env }) : update;
  if (install.status !== 0) return { skipped: `installing nginx-light failed (exit ${install.status}): ${(install.stderr || '').trim().split('\n').slice(-2).join(' ')}` };
  return findNginx() ?? { skipped: 'nginx-light was installed but no nginx binary was found' };
}

export async function startNginx({ binary, workDir, upstreamPort }) {
  const prefix = join(workDir, 'nginx');
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${prefix}/tmp/body;
  proxy_temp_path ${prefix}/tmp/proxy;
  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 128;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const proc = spawnProcess('nginx', binary, ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')], { log: join(prefix, 'stdout.log') });
  await waitForPort(port, 10_000, `nginx (see ${prefix}/error.log)`);
  let workers = [];
  for (let i = 0; i < 20 && workers.length === 0; i++) {
    workers = childPids(proc.pid);
    if (workers.length === 0) await sleep(50);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    /** The master and its worker: both count as the proxy's CPU. */
    pids: [proc.pid, ...workers],
    stop: () => proc.stop(),
  };
}
