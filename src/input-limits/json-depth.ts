import { MAX_JSON_DEPTH } from './limits.js';

/**
 * How deeply `text` nests arrays and objects, scanning at most until `stopAbove` is passed (then
 * returns `stopAbove + 1`). A linear scan with no recursion: the guard in front of JSON.parse,
 * whose result the rest of the code walks recursively.
 */
export function jsonNestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return deepest;
}

export type BoundedJson = { ok: true; value: unknown } | { ok: false; tooDeep: boolean; message: string };

/** JSON.parse behind the nesting bound: never throws, says why when it refuses. */
export function parseBoundedJson(text: string, maxDepth = MAX_JSON_DEPTH): BoundedJson {
  if (jsonNestingDepth(text, maxDepth) > maxDepth) return { ok: false, tooDeep: true, message: `nests arrays and objects more than ${maxDepth} levels deep (the limit for JSON documents)` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, tooDeep: false, message: (error as Error).message };
  }
}

/**
 * How deeply an already built value nests (iteratively, stopping past `stopAbove`), for values
 * that did not come from text this process scanned (a stored document, a decoded event).
 */
export function valueNestingDepth(value: unknown, stopAbove = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  let visited = 0;
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > deepest) {
      deepest = depth;
      if (deepest > stopAbove) return deepest;
    }
    // A bound on work as well as on depth: a wide document is walked once, never re-entered.
    if (++visited > 1_000_000) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return deepest;
}
