/**
 * The cap on aliases per operation (`graphql.maxAliases`, issue 25). Aliases are what lets one
 * query repeat a field thousands of times; they are counted where fragments are spread, so a
 * fragment of 40 aliases spread three times counts 120. Checked right after parsing and before
 * graphql-js's own validation, which on 10,000 aliased fields takes 50–200 ms: a document over the
 * cap is refused with this one error and never validated (the answer is cached with the document).
 */
import { GraphQLError, Kind, type DocumentNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

/** The error for the first operation of `document` holding more than `maxAliases` aliases, if any. */
export function aliasLimitError(document: DocumentNode, maxAliases: number): GraphQLError | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const memo = new Map<string, number>();

  // Stops counting past the cap: a fragment spread many times must not make the count itself costly.
  const count = (set: SelectionSetNode, visiting: Set<string>): number => {
    let n = 0;
    for (const sel of set.selections) {
      if (n > maxAliases) return n;
      if (sel.kind === Kind.FIELD) {
        if (sel.alias) n++;
        if (sel.selectionSet) n += count(sel.selectionSet, visiting);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        n += count(sel.selectionSet, visiting);
      } else {
        const name = sel.name.value;
        const fragment = fragments.get(name);
        if (!fragment || visiting.has(name)) continue; // unknown or cyclic: validation reports it
        let inside = memo.get(name);
        if (inside === undefined) {
          visiting.add(name);
          inside = count(fragment.selectionSet, visiting);
          visiting.delete(name);
          memo.set(name, inside);
        }
        n += inside;
      }
    }
    return n;
  };

  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION || count(d.selectionSet, new Set()) <= maxAliases) continue;
    return new GraphQLError(`the operation holds more than ${maxAliases} aliases (fragments counted where they are spread), the most allowed (graphql.maxAliases); ask for each field once`, {
      nodes: [d],
      extensions: { code: 'TOO_MANY_ALIASES', maxAliases },
    });
  }
  return undefined;
}
