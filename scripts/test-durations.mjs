#!/usr/bin/env node
// Writes test/durations.json, the seconds each test file took in a whole run, from vitest's JSON
// report (`npx vitest run --reporter=json --outputFile=<file>`): the suite's sequencer
// (test/support/longest-first.ts) starts the longest files first, so no long file starts last
// on a fresh clone, where vitest has no timings of its own and would start the largest first.
//
//   node scripts/test-durations.mjs <report.json>
import { readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

const report = process.argv[2];
if (!report) {
  console.error('usage: node scripts/test-durations.mjs <vitest JSON report>');
  process.exit(2);
}
const root = resolve(import.meta.dirname, '..');
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const seconds = {};
for (const file of testResults) {
  const name = relative(root, file.name).replace(/^.*?(?=test\/)/, '');
  seconds[name] = Math.round((file.endTime - file.startTime) / 100) / 10;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(resolve(root, 'test/durations.json'), JSON.stringify(sorted, null, 2) + '\n');
console.log(
  `test/durations.json: ${Object.keys(sorted).length} files, ${Object.values(sorted)
    .reduce((a, b) => a + b, 0)
    .toFixed(0)} s in all`,
);
