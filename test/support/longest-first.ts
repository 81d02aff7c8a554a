import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Starts the files that took longest in a recorded run first (test/durations.json, written by
 * scripts/test-durations.mjs), so the run ends with short files filling the workers rather than
 * with one long file started last: on a fresh clone (CI) vitest has no timings of its own and
 * orders by file size, which put minute-long files at the end. A file not in the record (new
 * since) goes first: its length is unknown.
 */
export class LongestFirst extends BaseSequencer {
  private readonly seconds: Record<string, number> = JSON.parse(readFileSync(new URL('../durations.json', import.meta.url), 'utf8')) as Record<string, number>;

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const length = (f: TestSpecification) => this.seconds[relative(root, f.moduleId)] ?? Infinity;
    return [...files].sort((a, b) => length(b) - length(a));
  }
}
