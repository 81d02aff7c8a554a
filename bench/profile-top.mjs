#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time, and self
 * time per source file. Usage: node bench/profile-top.mjs FILE.cpuprofile [--top 30]
 * Profiles of Outrigger processes: BENCH_CPU_PROF=c,e (scenario ids) npm run bench
 * writes them to bench/.work/run-*\/profiles/<id>/ when the processes stop.
 */
import { readFileSync } from 'node:fs';

process.stdout.on('error', () => process.exit(0)); // piped into head

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/profile-top.mjs FILE.cpuprofile [--top N]\n');
  process.exit(2);
}
const topIndex = process.argv.indexOf('--top');
const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 30;
const requestsIndex = process.argv.indexOf('--requests');
const requests = requestsIndex > 0 ? Number(process.argv[requestsIndex + 1]) : 0;
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const deltas = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (deltas[i] ?? 0));
// Idle time is the process waiting; percentages are of the time it was busy.
for (const [id] of self) if (byId.get(id).callFrame.functionName === '(idle)') self.delete(id);
const total = [...self.values()].reduce((a, b) => a + b, 0);

const short = (url) =>
  url
    .replace(/^file:\/\//, '')
    .replace(process.cwd() + '/', '')
    .replace(/^.*node_modules\//, 'node_modules/');
const fnKey = (n) => `${n.callFrame.functionName || '(anonymous)'}  ${short(n.callFrame.url) || '(native)'}:${n.callFrame.lineNumber + 1}`;
const fileKey = (n) => short(n.callFrame.url) || `(${n.callFrame.functionName || 'native'})`;

function rank(keyOf) {
  const m = new Map();
  for (const [id, t] of self) {
    const k = keyOf(byId.get(id));
    m.set(k, (m.get(k) ?? 0) + t);
  }
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms busy (idle excluded)\n`);

// Where the busy time goes, by kind (and per request with --requests N).
const kindOf = (n) => {
  const { functionName: fn, url } = n.callFrame;
  if (fn === '(garbage collector)') return 'garbage collection';
  if (!url && /^(write|writev|writeUtf8String|writeLatin1String|writeBuffer|read|readv|close|epoll)/.test(fn)) return 'socket syscalls (native writes/reads)';
  if (
    /modules\/(cjs|esm)|compileSource|wrapSafe|bootstrap|cjs-module-lexer|package_json/.test(url) ||
    /^(wrapSafe|compileSourceTextModule|internalModuleStat|readFileUtf8|openFileHandle|fstat)$/.test(fn)
  )
    return 'start-up (module loading, compiling)';
  if (url.includes('/dist/') || url.includes('/bench/servers/')) return 'JS: the proxy itself';
  if (url.includes('node_modules/undici')) return 'JS: undici';
  if (url.includes('node_modules/')) return 'JS: other dependencies';
  if (url.startsWith('node:')) return 'JS: Node core (http, streams, events)';
  return 'other native / program';
};
process.stdout.write('\nby kind:\n');
for (const [k, t] of rank(kindOf)) process.stdout.write(`${pct(t)}  ${requests ? `${(t / requests).toFixed(1).padStart(6)} µs/req  ` : ''}${k}\n`);
process.stdout.write('\nself time by function:\n');
for (const [k, t] of rank(fnKey).slice(0, top)) process.stdout.write(`${pct(t)}  ${k}\n`);
process.stdout.write('\nself time by file:\n');
for (const [k, t] of rank(fileKey).slice(0, top)) process.stdout.write(`${pct(t)}  ${k}\n`);

// Inclusive (self + callees) time of the project's own functions: where the request path spends it.
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map();
for (const [id, t] of self) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur);
    if (!n.callFrame.url.includes('/dist/')) continue;
    const k = fnKey(n);
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + t);
  }
}
process.stdout.write('\ninclusive time of project functions (dist/):\n');
for (const [k, t] of [...inclusive.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(t)}  ${k}\n`);
