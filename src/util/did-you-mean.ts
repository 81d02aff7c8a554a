/**
 * ` (did you mean "x"?)` when a candidate is close enough to `input` to be a typo, else ''.
 * One place for every "did you mean": config keys, predicate names, GraphQL app fields.
 */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const best = closest(input, candidates);
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}

/** The candidate closest to `input` (case-insensitive), when it is within a typo's distance. */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(input.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  const threshold = input.length <= 3 ? 1 : Math.max(2, Math.floor(input.length / 3));
  return best !== undefined && bestDistance <= threshold ? best : undefined;
}

/** Optimal string alignment: insertions, deletions, substitutions and adjacent transpositions. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number) => (d[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = v;
    }
  }
  return at(a.length, b.length);
}
