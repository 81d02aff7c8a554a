/**
 * `npm ci` prints no warning about install scripts (issue 36): npm 11 warns about every
 * dependency whose install script package.json's `allowScripts` does not cover. esbuild's is
 * denied there because it is not needed (docs/decisions.md); a new dependency with an install
 * script must be decided on the same way. Read-only: `npm install-scripts ls` edits nothing.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const npmMajor = Number(execFileSync('npm', ['--version'], { encoding: 'utf8' }).split('.')[0]);

describe('install scripts of dependencies', () => {
  it("denies esbuild's postinstall in package.json (its binary comes in @esbuild/<platform>)", () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
    expect(pkg.allowScripts).toEqual({ esbuild: false });
  });

  it.skipIf(npmMajor < 11)('leaves no install script unreviewed, so npm ci has nothing to warn about', () => {
    const out = execFileSync('npm', ['install-scripts', 'ls'], { cwd: root, encoding: 'utf8' });
    expect(out.trim()).toBe('No packages with unreviewed install scripts.');
  });
});
