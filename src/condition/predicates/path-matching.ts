/** Undertow's `URLUtils.normalizeSlashes`: a leading `/` added, trailing `/`s removed (but `/` stays). */
export function normalizeSlashes(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 47) end--;
  const trimmed = end === path.length ? path : path.slice(0, end);
  return trimmed.charCodeAt(0) === 47 ? trimmed : `/${trimmed}`;
}

/** A pattern as Undertow's path predicates register it: `/` prepended when missing, then normalized. */
export function normalizePattern(path: string): string {
  return normalizeSlashes(path.startsWith('/') ? path : `/${path}`);
}

/**
 * Undertow's `PathMatcher` used as a prefix matcher: a prefix matches the whole path or the
 * path up to a `/`, longest prefix first; `/` is the catch-all. Returns the remaining part of
 * the path (bound as `${remaining}`), or undefined when nothing matches.
 */
export class PrefixMatcher {
  private readonly prefixes: readonly string[];
  private readonly matchesEverything: boolean;

  constructor(patterns: readonly string[]) {
    const normalized = new Set(patterns.map(normalizePattern));
    this.matchesEverything = normalized.delete('/');
    this.prefixes = [...normalized].sort((a, b) => b.length - a.length);
  }

  match(path: string): string | undefined {
    for (const prefix of this.prefixes) {
      if (prefix.length === path.length) {
        if (prefix === path) return '';
      } else if (prefix.length < path.length && path.charCodeAt(prefix.length) === 47 && path.startsWith(prefix)) {
        return path.slice(prefix.length);
      }
    }
    return this.matchesEverything ? path : undefined;
  }
}
