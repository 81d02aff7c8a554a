import { execFileSync } from 'node:child_process';

/** The commit a bench ran (short hash, and whether tracked files had uncommitted changes), or null outside git. */
export function gitDescribe() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return `${head}${dirty ? ' (with uncommitted changes)' : ''}`;
  } catch {
    return null;
  }
}
