// Commit messages as the house writes them (issue 46; run by `npm run lint`): a subject of one
// line, at most 100 characters ("area: what"), a blank line, then the why in the body. `git log
// --oneline` and every review tool show the subject alone, so it must say what changed on its
// own; the reasons belong below it, where they can take the room they need.
//
// Only commits after BASE are checked: the history before it was written under no such rule
// and cannot be rewritten. Merge commits are git's own words and are not checked.
import { execFileSync } from 'node:child_process';

/** main's HEAD when the rule was set. */
const BASE = '07653e36ce3d9d08423062cda1a43df28c7a83cb';
const MAX_SUBJECT = 100;

/** Landed (or already merged into a branch) before this check existed; shared history is not rewritten. */
const KNOWN = new Set([
  '8d77e21ec4e3a69db4d3eeb7acb2e3b416055d88',
  'dc9d17bd3e87b3d5368816835c2ef0027ec5581d',
  '2ae4eee631b122511e9b964b047573a14beaef1c',
  // Landed by the check's own author the hour it was set, before lint caught it.
  'c0cbbb0307604baa8d2280a05cdb2bafe7c5f086',
  // engines: landed with a 101-character subject when a chained command went on past the failing lint.
  '923d3112c143d086a929f93bf0336dd417314dad',
  // gqlerr: landed with a 109-character subject, the same chained command past the failing lint.
  '1dcd867e7c47e8ead1e2fd0cc5af54f6c0fabfac',
  // graphiql test: landed with a 101-character subject by a landing loop that skipped the lint.
  'c8b2e031d3f6e1ab436545d8afca3d7724fdc645',
  // protect2 bench: landed with a 101-character subject; the lint ran before the commit was made.
  'c3f1641369338a5dcb446fd7498cbc3f4f7f5140',
]);

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
const skip = (why) => {
  console.log(`check-commit-subjects: skipped, ${why}`);
  process.exit(0);
};

try {
  git('rev-parse', '--git-dir');
} catch {
  skip('not a git checkout');
}
try {
  git('cat-file', '-e', `${BASE}^{commit}`);
} catch {
  // A shallow clone (CI's default depth, a tarball) may not reach the base: nothing to compare with.
  skip(`the base commit ${BASE.slice(0, 7)} is not in this clone (shallow?); fetch more history to check`);
}

const problems = [];
const commits = git('rev-list', '--no-merges', `${BASE}..HEAD`).split('\n').filter(Boolean);
for (const commit of commits) {
  if (KNOWN.has(commit)) continue;
  const lines = git('log', '-1', '--format=%B', commit).replace(/\n+$/, '').split('\n');
  const subject = lines[0] ?? '';
  const short = `${commit.slice(0, 7)} "${subject.length > 60 ? subject.slice(0, 57) + '...' : subject}"`;
  const length = [...subject].length;
  if (length === 0) problems.push(`${short}: no subject`);
  if (length > MAX_SUBJECT) problems.push(`${short}: the subject is ${length} characters; at most ${MAX_SUBJECT}, the details go in the body`);
  if (lines.length > 1 && lines[1] !== '') problems.push(`${short}: the subject runs onto a second line; end it with a blank line, then the body`);
  if (!lines.slice(2).some((line) => line.trim() !== '')) problems.push(`${short}: no body; after a blank line, say why`);
}

if (problems.length > 0) {
  console.error(`check-commit-subjects: ${problems.length} problem(s) in the commits after ${BASE.slice(0, 7)}:`);
  for (const problem of problems) console.error(`  ${problem}`);
  console.error('Fix an unlanded commit with `git commit --amend` (the last one) or an interactive rebase of your own branch.');
  process.exit(1);
}
console.log(`check-commit-subjects: ${commits.length} commit(s) after ${BASE.slice(0, 7)}, every subject one line of at most ${MAX_SUBJECT} characters with a body`);
