import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';

export const CLI = resolve(import.meta.dirname, '../../../dist/src/cli/index.js');

/**
 * Fails the test loudly when the CLI is not built: a test of the built CLI must never skip
 * silently (issue 54). `npm test` builds first; a single file run needs `npm run build`.
 */
export function requireBuiltCli(why: string): void {
  if (!existsSync(CLI)) throw new Error(`run \`npm run build\` first: ${why} (${CLI} does not exist)`);
}

export function writeTempFile(name: string, content: string | object): string {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-cli-'));
  const file = join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : stringify(content));
  return file;
}

/** Runs the built CLI to completion. */
export function runCli(args: string[], options: { stdin?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? '');
  });
}

export interface RunningCli {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `outrigger start -c FILE` and resolves once it logs the URL it listens on. */
// The deadlines below are for a process that never starts or never ends, not a speed goal: on a
// loaded machine (issue 40) a Node process can take over 15 s to load and start.
export function startCli(configFile: string, extraArgs: string[] = [], timeoutMs = 60_000, env?: NodeJS.ProcessEnv): Promise<RunningCli> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, 'start', '-c', configFile, ...extraArgs], { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env: { ...process.env, ...env } } : {}) });
    let output = '';
    let found = false;
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`outrigger did not start within ${timeoutMs / 1000} s:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match && !found) {
        found = true;
        clearTimeout(timer);
        resolvePromise({ child, url: match[1]!, output: () => output, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      if (!found) {
        clearTimeout(timer);
        reject(new Error(`outrigger exited with ${code} before listening:\n${output}`));
      }
    });
  });
}

/** Resident set size of a process in bytes, from /proc (Linux). */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
}
