import { MAX_GRAPHQL_NESTING } from './limits.js';

/**
 * How deeply a GraphQL document nests `{`, `(` and `[` outside strings and comments, stopping
 * once past `stopAbove`. graphql-js parses recursively, so a few thousand `{` or `[` would
 * overflow its stack; this linear pre-scan refuses them first (the `maxTokens` option of
 * `parse` bounds length, not depth).
 */
export function graphqlNestingDepth(source: string, stopAbove = MAX_GRAPHQL_NESTING): number {
  let depth = 0;
  let deepest = 0;
  const n = source.length;
  for (let i = 0; i < n; i++) {
    const c = source.charCodeAt(i);
    if (c === 35 /* # */) {
      while (i < n && source.charCodeAt(i) !== 10 && source.charCodeAt(i) !== 13) i++;
    } else if (c === 34 /* " */) {
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        // Escaped \""" inside a block string: skip past each one.
        let close = end;
        while (close !== -1 && source.charCodeAt(close - 1) === 92) close = source.indexOf('"""', close + 3);
        if (close === -1) return deepest;
        i = close + 2;
      } else {
        i++;
        while (i < n) {
          const d = source.charCodeAt(i);
          if (d === 92) i += 2;
          else if (d === 34 || d === 10 || d === 13) break;
          else i++;
        }
      }
    } else if (c === 123 || c === 40 || c === 91) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 125 || c === 41 || c === 93) depth--;
  }
  return deepest;
}
