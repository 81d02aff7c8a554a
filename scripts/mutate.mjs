#!/usr/bin/env node
// `npm run mutate [-- group ...] [-- stryker options]`: StrykerJS over the modules whose failure
// is a security or data-loss bug (docs/testing.md, "Mutation testing"), one module group at a
// time, each against its own tests (stryker.config.mjs and vitest.mutate.config.ts read
// MUTATE_GROUPS), then one line per group with its score. Not run by CI: it takes tens of minutes.
//
//   npm run mutate                      every group: access, limits, keys, ssrf, bus
//   npm run mutate -- keys bus          those groups only
//   npm run mutate -- keys --force      retest every mutant, not only those whose code or tests changed
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const GROUPS = ['access', 'limits', 'keys', 'ssrf', 'bus'];
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const chosen = args.filter((a) => GROUPS.includes(a));
const strykerArgs = args.filter((a) => !GROUPS.includes(a));
const unknown = strykerArgs.filter((a) => !a.startsWith('-'));
if (unknown.length) {
  console.error(`mutate: no module group ${unknown.join(', ')}; the groups are ${GROUPS.join(', ')}`);
  process.exit(2);
}
const stryker = join(root, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js');

/** Stryker's score from its JSON report: detected / (detected + undetected), as its table shows. */
function score(group) {
  const file = join(root, 'reports', 'mutation', `${group}.json`);
  if (!existsSync(file)) return null;
  const counts = {};
  for (const f of Object.values(JSON.parse(readFileSync(file, 'utf8')).files)) {
    for (const m of f.mutants) {
      // Ignored: a string literal (not mutated, stryker.config.mjs) or static (setup-only code).
      const status = m.status === 'Ignored' ? (/excluded mutation/.test(m.statusReason ?? '') ? 'Excluded' : 'Static') : m.status;
      counts[status] = (counts[status] ?? 0) + 1;
    }
  }
  const n = (s) => counts[s] ?? 0;
  const detected = n('Killed') + n('Timeout');
  const undetected = n('Survived') + n('NoCoverage');
  const total = detected + undetected;
  return {
    score: total ? (100 * detected) / total : 100,
    covered: detected + n('Survived') ? (100 * detected) / (detected + n('Survived')) : 100,
    ...Object.fromEntries(['Killed', 'Timeout', 'Survived', 'NoCoverage', 'Static', 'Excluded'].map((s) => [s, n(s)])),
  };
}

let failed = false;
const summary = [];
for (const group of chosen.length ? chosen : GROUPS) {
  const started = Date.now();
  console.log(`\n== mutate: ${group}`);
  const run = spawnSync(process.execPath, [stryker, 'run', ...strykerArgs], { cwd: root, stdio: 'inherit', env: { ...process.env, MUTATE_GROUPS: group } });
  if (run.status !== 0) failed = true;
  summary.push({ group, minutes: (Date.now() - started) / 60_000, status: run.status, result: run.status === 0 ? score(group) : null });
}
console.log('\n== mutate: scores (killed + timed out, of all mutants tested; "covered": of those some test ran)');
for (const { group, minutes, status, result } of summary) {
  if (!result) console.log(`${group.padEnd(7)} FAILED (stryker exit ${status})`);
  else
    console.log(
      `${group.padEnd(7)} ${result.score.toFixed(1).padStart(5)} %  covered ${result.covered.toFixed(1).padStart(5)} %  killed ${result.Killed}, timeout ${result.Timeout}, survived ${result.Survived}, no coverage ${result.NoCoverage}, static (ignored) ${result.Static}, strings (not mutated) ${result.Excluded}  ${minutes.toFixed(1)} min`,
    );
}
process.exit(failed ? 1 : 0);
